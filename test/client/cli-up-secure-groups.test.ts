// `fleet up --secure` with a log of 3 stream groups (FLEET_STREAM_GROUPS=3): the generated users'
// permissions name every group's stream, prompts run in sessions of every group in each tenant, and
// a start with another K is refused before anything starts.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient } from "@fleet/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../gateway/support.js";
import { sessionPerGroup } from "../support/session-per-group.js";
import { collect, runCli, spawnCli, stopClis, waitForOutput } from "./support/run-cli.js";
import { secureUpEnv } from "./support/secure-up-env.js";

const PARTITIONS = 4;
const GROUPS = 3;

interface TokensFile {
  tokens: { token: string; tenant: string; role: "read" | "operate" }[];
}

/** One session id of `tenant` per stream group. */
const sessionsOf = (tenant: string) => sessionPerGroup(`s-${tenant}-`, PARTITIONS, GROUPS);

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "fleet-up-secure-k3-"));
});
// A failed test leaves its \`fleet up\` running: it stops here with its servers, before their files go.
afterAll(async () => {
  await stopClis();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe("fleet up --secure with 3 stream groups", () => {
  it("runs prompts in every group of both tenants, and refuses another K for the same files", async () => {
    const { home, secureDir, port, env } = await secureUpEnv(dir, {
      FLEET_PARTITIONS: String(PARTITIONS),
      FLEET_STREAM_GROUPS: String(GROUPS),
    });
    const up = spawnCli(["up", "--secure"], { cwd: dir, env });
    const finished = collect(up, 180_000);
    const banner = await waitForOutput(up, /Ctrl-C stops everything/, 90_000);
    expect(banner).toContain("partitions: 4, stream groups: 3");
    const base = `http://127.0.0.1:${port}`;
    await expect
      // Every tenant's services ready (slow on a loaded machine: a start may time out and be restarted).
      .poll(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status, { timeout: 150_000 })
      .toBe(200);
    const tokens = JSON.parse(readFileSync(join(secureDir, "tokens.json"), "utf8")) as TokensFile;
    const tokenOf = (tenant: string, role: string) =>
      tokens.tokens.find((t) => t.tenant === tenant && t.role === role)?.token ?? "";

    for (const tenant of ["acme", "globex"]) {
      for (const sid of sessionsOf(tenant)) {
        const sent = await call(base, "POST", `/v1/sessions/${sid}/commands`, {
          token: tokenOf(tenant, "operate"),
          body: { type: "prompt", text: "what is here?" },
        });
        expect(sent.status, JSON.stringify(sent.body)).toBe(200);
        expect(sent.body.event.type).toBe("command_accepted");
      }
    }
    for (const tenant of ["acme", "globex"]) {
      for (const sid of sessionsOf(tenant)) {
        await expect
          .poll(
            async () => {
              const state = await call(base, "GET", `/v1/sessions/${sid}`, { token: tokenOf(tenant, "read") });
              return state.body.status === "idle" && state.body.messages.length > 2;
            },
            { timeout: 60_000 },
          )
          .toBe(true);
      }
    }
    // The SDK as acme's operator: K = 3 from the log, each session in its group's stream.
    const stack = JSON.parse(readFileSync(join(home, "stack.json"), "utf8")) as { natsUrl: string };
    const client = await FleetClient.connect({
      natsUrl: stack.natsUrl,
      name: "secure-k3-test",
      auth: { creds: join(secureDir, "creds", "acme-operator.creds") },
    });
    try {
      expect(client.groups).toBe(GROUPS);
      const streams = sessionsOf("acme").map((sid) => client.eventStream(sid));
      expect(streams).toEqual(["FLEET_EVENTS_G0", "FLEET_EVENTS_G1", "FLEET_EVENTS_G2"]);
      for (const sid of sessionsOf("acme")) {
        const replayed = await client.replay(sid);
        expect(replayed.agent.messages.length, sid).toBeGreaterThan(2);
      }
    } finally {
      await client.close();
    }
    for (const name of ["acme", "globex"].flatMap((t) => [`store-${t}`, `tools-${t}`, `loop-${t}`]).concat("gateway")) {
      expect(readFileSync(join(home, "logs", `${name}.log`), "utf8"), name).not.toContain("nats_permission_denied");
    }
    up.kill("SIGTERM");
    expect((await finished).code).toBe(0);

    // The files name 3 groups' streams: another K is refused before anything starts.
    const other = await runCli(["up", "--secure"], { cwd: dir, env: { ...env, FLEET_STREAM_GROUPS: "2" } });
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain("generated for 3 stream groups");
  }, 300_000);
});
