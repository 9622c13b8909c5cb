// Logins against a real nats-server: an nkey user and a token, and the one-line refusal.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type NatsServer, startNats } from "@fleet/testkit";
import { nkeys } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { connectFleet } from "./nats-connection.js";

const dir = mkdtempSync(join(tmpdir(), "fleet-auth-int-"));
const servers: NatsServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  rmSync(dir, { recursive: true, force: true });
});

describe("nats auth / real server", () => {
  it("logs in with an nkey seed file and refuses another key, naming it", async () => {
    const kp = nkeys.createUser();
    const server = await startNats({
      config: `authorization { users: [{ nkey: ${JSON.stringify(kp.getPublicKey())} }] }`,
    });
    servers.push(server);
    const seed = join(dir, "ok.nk");
    writeFileSync(seed, new TextDecoder().decode(kp.getSeed()));
    const { nc, identity } = await connectFleet({ role: "reader", url: server.url, name: "t", auth: { nkey: seed } });
    expect(identity).toBe(`nkey ${kp.getPublicKey()}`);
    await nc.close();

    const stranger = nkeys.createUser();
    const other = join(dir, "other.nk");
    writeFileSync(other, new TextDecoder().decode(stranger.getSeed()));
    const refused = await connectFleet({
      role: "reader",
      url: server.url,
      name: "t",
      auth: { nkey: other },
      maxReconnectAttempts: 0,
    }).catch((e: Error) => e.message);
    expect(refused).toBe(
      `NATS at ${server.url} refused the login of nkey ${stranger.getPublicKey()}: Authorization Violation`,
    );
  });

  it("logs in with a token, and refuses a wrong one without printing it", async () => {
    const server = await startNats({ config: 'authorization { token: "right-token" }' });
    servers.push(server);
    const { nc } = await connectFleet({ role: "loop", url: server.url, name: "t", auth: { token: "right-token" } });
    await nc.close();
    const refused = await connectFleet({
      role: "loop",
      url: server.url,
      name: "t",
      auth: { token: "wrong-token" },
      maxReconnectAttempts: 0,
    }).catch((e: Error) => e.message);
    expect(refused).toBe(`NATS at ${server.url} refused the login of token: Authorization Violation`);
  });
});
