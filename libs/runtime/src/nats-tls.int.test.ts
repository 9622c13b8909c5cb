// NATS_TLS_CA / NATS_TLS_CERT / NATS_TLS_KEY against a real nats-server that verifies client certificates.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  canCreateTestCertificates,
  createTestCertificates,
  type NatsServer,
  natsTlsConfig,
  startNats,
  type TestCertificates,
} from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectFleet } from "./nats-connection.js";

const dir = mkdtempSync(join(tmpdir(), "fleet-tls-"));
let server: NatsServer;
let certs: TestCertificates;

describe.skipIf(!canCreateTestCertificates())("nats auth / TLS", () => {
  beforeAll(async () => {
    certs = createTestCertificates(dir);
    server = await startNats({ config: natsTlsConfig(certs, { verify: true }) });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("connects with the CA and a client certificate", async () => {
    const { nc, identity } = await connectFleet({
      role: "reader",
      url: server.url,
      name: "tls",
      auth: { tlsCa: certs.ca, tlsCert: certs.clientCert, tlsKey: certs.clientKey },
    });
    expect(identity).toBe("anonymous with TLS client certificate");
    expect(nc.info?.tls_required).toBe(true);
    await nc.close();
  });

  it("fails in one line without the client certificate", async () => {
    const message = await connectFleet({
      role: "reader",
      url: server.url,
      name: "tls",
      auth: { tlsCa: certs.ca },
      maxReconnectAttempts: 0,
      timeoutMs: 2_000,
    }).then(
      () => "connected",
      (e: Error) => e.message,
    );
    expect(message).toMatch(new RegExp(`^cannot connect to NATS at ${server.url} as anonymous: `));
    expect(message).not.toContain("\n");
  });
});
