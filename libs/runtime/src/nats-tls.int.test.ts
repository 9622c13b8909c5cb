// NATS_TLS_CA / NATS_TLS_CERT / NATS_TLS_KEY against a real nats-server that verifies client certificates.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type NatsServer, startNats } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectFleet } from "./nats-connection.js";

const OPENSSL = "/usr/bin/openssl";
const dir = mkdtempSync(join(tmpdir(), "fleet-tls-"));
const f = (name: string) => join(dir, name);
const ssl = (...args: string[]) => execFileSync(OPENSSL, args, { cwd: dir, stdio: "ignore" });
let server: NatsServer;

describe.skipIf(!existsSync(OPENSSL))("nats auth / TLS", () => {
  beforeAll(async () => {
    ssl(
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "ca.key",
      "-out",
      "ca.pem",
      "-days",
      "1",
      "-subj",
      "/CN=fleet-test-ca",
    );
    for (const name of ["server", "client"]) {
      ssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        `${name}.key`,
        "-out",
        `${name}.csr`,
        "-subj",
        `/CN=fleet-${name}`,
      );
      execFileSync(
        OPENSSL,
        [
          "x509",
          "-req",
          "-in",
          `${name}.csr`,
          "-CA",
          "ca.pem",
          "-CAkey",
          "ca.key",
          "-CAcreateserial",
          "-out",
          `${name}.pem`,
          "-days",
          "1",
          "-extfile",
          "-",
        ],
        {
          cwd: dir,
          input: name === "server" ? "subjectAltName=IP:127.0.0.1,DNS:localhost\n" : "extendedKeyUsage=clientAuth\n",
          stdio: ["pipe", "ignore", "ignore"],
        },
      );
    }
    server = await startNats({
      config: `tls { cert_file: ${JSON.stringify(f("server.pem"))}, key_file: ${JSON.stringify(f("server.key"))}, ca_file: ${JSON.stringify(f("ca.pem"))}, verify: true }`,
    });
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
      auth: { tlsCa: f("ca.pem"), tlsCert: f("client.pem"), tlsKey: f("client.key") },
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
      auth: { tlsCa: f("ca.pem") },
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
