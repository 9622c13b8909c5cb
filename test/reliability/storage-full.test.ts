// JetStream's storage fills up under a running stack (loop, runner, store and gateway as separate
// processes, nats-server with max_file_store): every accepted prompt waits and finishes once after the
// space returns, within a lease TTL and a few seconds, and users get a clear `storage_full` meanwhile.
// The 3 s and 20 s outages run in `npm test`; the 40 s one with FLEET_SLOW_TESTS=1.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient, inspectDeployment, isFleetError, newSessionId } from "@fleet/client";
import type { FleetEvent } from "@fleet/protocol";
import { getFreePort, type NatsServer, type RedisServer, startNats, startRedis } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../client/support/run-cli.js";
import { followSession } from "../support/follow-session.js";
import { scriptedLoopEnv } from "../support/loop-process.js";
import { type ServiceProcess, spawnService } from "../support/service-process.js";
import { fillStorage } from "../support/storage-filler.js";

const TTL = 6_000;
const SESSIONS = 4;
/** After the space returns, every accepted prompt ends within the lease TTL plus this much. */
const FINISH_SLACK_MS = 6_000;

let nats: NatsServer;
let redis: RedisServer;
let dir: string;
let loop: ServiceProcess;
let tools: ServiceProcess;
let store: ServiceProcess;
let gateway: ServiceProcess;
let gatewayUrl: string;
let loopOps: string;
let client: FleetClient;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  nats = await startNats({ jetstream: { maxFileStore: 64 * 1024 ** 2 } });
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), "fleet-storage-full-"));
  // Per prompt: a bash call that marks its run in ran.log and takes 1 s, then a reply streamed over ~1.5 s.
  writeFileSync(
    join(dir, "script.json"),
    JSON.stringify({
      chunkChars: 4,
      turns: [
        {
          content: [
            {
              type: "toolCall",
              id: "sh",
              name: "bash",
              arguments: { command: "echo ran >> ran.log; sleep 1; echo slept" },
            },
          ],
        },
        { text: "z".repeat(240), tokensPerSecond: 40 },
      ],
    }),
  );
  const common = { NATS_URL: nats.url, FLEET_LEASE_TTL_MS: String(TTL), FLEET_OPS_PORT: "0" };
  loop = spawnService("loop", {
    ...scriptedLoopEnv(nats.url, join(dir, "script.json"), TTL),
    FLEET_WORKER_ID: "loop-sf",
  });
  await loop.waitForLog(undefined, 60_000);
  loopOps = `http://127.0.0.1:${/"evt":"loop_started"[^\n]*"opsPort":(\d+)/.exec(loop.output())?.[1]}`;
  const port = await getFreePort();
  gatewayUrl = `http://127.0.0.1:${port}`;
  tools = spawnService("tools", { ...common, FLEET_WORKSPACE: dir, FLEET_TOOLS: "bash", FLEET_RUNNER_ID: "r-sf" });
  store = spawnService("store", { ...common, REDIS_URL: redis.url, FLEET_WORKER_ID: "store-sf" });
  gateway = spawnService("gateway", { NATS_URL: nats.url, FLEET_GATEWAY_PORT: String(port) });
  await Promise.all([tools.waitForLog(undefined, 60_000), store.waitForLog(undefined, 60_000), gateway.waitForLog()]);
  client = await FleetClient.connect({ natsUrl: nats.url, commandTimeoutMs: 10_000 });
}, 120_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await Promise.all([loop, tools, store, gateway].map((p) => p?.stop()));
  await nats?.stop();
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const count = (events: FleetEvent[], type: FleetEvent["type"]) => events.filter((e) => e.type === type).length;

async function gatewayCall(method: string, path: string, body?: unknown) {
  const res = await fetch(`${gatewayUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The value of a Prometheus counter (summed over its labels matching `labels`), 0 when absent. */
async function counter(url: string, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(name) && l.includes(labels))
    .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
}

/** Lines the loop logged with `evt` for `sessionId` since `from` (an offset into its output). */
const loopLines = (from: number, evt: string, sessionId: string) =>
  loop
    .output()
    .slice(from)
    .split("\n")
    .filter((l) => l.includes(`"evt":"${evt}"`) && l.includes(`"sessionId":"${sessionId}"`));

/**
 * SESSIONS prompts are accepted and running when the store fills; while it is full, a new prompt gets
 * `storage_full` from the SDK and the gateway, a re-send of an accepted prompt's id gets its outcome,
 * and the health report says full. After the space returns every accepted prompt finishes once.
 */
async function outage(holdMs: number, opts: { cli?: boolean } = {}) {
  const logFrom = loop.output().length;
  const sids = Array.from({ length: SESSIONS }, () => newSessionId());
  const follows = sids.map((sid) => followSession(client, sid));
  const accepted: { commandId: string }[] = [];
  for (const sid of sids) {
    accepted.push(await client.prompt(sid, { text: `go ${holdMs}` }));
    await sleep(250);
  }
  const fill = await fillStorage(client.nc);
  const fullAt = Date.now();
  let released = false;
  try {
    // What users see meanwhile: the SDK, the gateway and the health report say that the store is full.
    const refused = await client.prompt(newSessionId(), { text: "while full" }).catch((err: unknown) => err);
    expect(isFleetError(refused) && [refused.kind, refused.code]).toEqual(["unavailable", "storage_full"]);
    expect((refused as Error).message).toMatch(/the event store is full/);
    const http = await gatewayCall("POST", `/v1/sessions/${newSessionId()}/commands`, { type: "prompt", text: "x" });
    expect([http.status, (http.body.error as { code: string }).code]).toEqual([503, "storage_full"]);
    const health = await gatewayCall("GET", "/v1/fleet/health");
    expect(health.body.storage).toMatchObject({ full: true, probeError: "insufficient resources" });
    if (opts.cli) {
      const env = { NATS_URL: nats.url, REDIS_URL: redis.url };
      const cli = await runCli(["prompt", "-s", newSessionId(), "while", "full"], { env });
      expect(cli.code).toBe(1);
      expect(cli.stderr).toMatch(
        /^fleet: cannot send prompt \S+: the event store is full \(storage_full; JetStream: insufficient resources\)/,
      );
      const doctor = await runCli(["doctor"], { env });
      expect(doctor.code).toBe(1);
      expect(doctor.stdout).toMatch(/✗ storage: FULL, JetStream refuses writes/);
    }
    // A client that re-sends an accepted prompt (same id: deduplicated by the stream) gets its outcome.
    const again = await client.prompt(
      sids[0] as string,
      { text: `go ${holdMs}` },
      { commandId: accepted[0]?.commandId },
    );
    expect(again.commandId).toBe(accepted[0]?.commandId);
    await sleep(Math.max(0, fullAt + holdMs - Date.now()));
    await fill.release();
    released = true;
  } finally {
    if (!released) await fill.release();
  }
  const releasedAt = Date.now();
  const deadline = releasedAt + TTL + FINISH_SLACK_MS + 30_000;
  while (follows.some((f) => count(f.events(), "agent_end") === 0) && Date.now() < deadline) await sleep(50);
  const finishedMs = Date.now() - releasedAt;
  for (const f of follows) f.stop();
  console.log(`store full for ${holdMs} ms: every prompt finished ${finishedMs} ms after the space returned`);

  for (const [i, sid] of sids.entries()) {
    const log = follows[i]?.events() ?? [];
    expect(count(log, "agent_end"), `${sid}: ${log.map((e) => e.type).join(",")}`).toBe(1);
    expect(count(log, "agent_start")).toBe(1);
    const outcomes = log.filter(
      (e) => (e.type === "command_accepted" || e.type === "command_rejected") && e.commandId === accepted[i]?.commandId,
    );
    expect(outcomes.map((e) => e.type)).toEqual(["command_accepted"]);
    expect(new Set(log.map((e) => e.meta.id)).size).toBe(log.length);
    // Every bash call the log started ran exactly once (ran.log has one line per run).
    const bashCalls = new Set(log.flatMap((e) => (e.type === "tool_execution_start" ? [e.toolCallId] : [])));
    expect(count(log, "tool_execution_end")).toBe(bashCalls.size);
    const ran = readFileSync(join(dir, sid, "ran.log"), "utf8")
      .trim()
      .split("\n");
    expect(ran.length).toBe(bashCalls.size);
    // The refusal is logged once per session for the outage, not once per retry.
    expect(loopLines(logFrom, "append_refused", sid).length).toBeLessThanOrEqual(1);
  }
  expect(finishedMs).toBeLessThanOrEqual(TTL + FINISH_SLACK_MS);
  expect(loop.output().slice(logFrom)).toContain('"evt":"append_refused"');
  expect(await counter(loopOps, "fleet_loop_appends_refused_total", 'cause="storage_full"')).toBeGreaterThan(0);
  expect(await counter(gatewayUrl, "fleet_gateway_publishes_refused_total")).toBeGreaterThan(0);
  expect(gateway.output()).toContain('"evt":"storage_full"');
  const after = await inspectDeployment(client.nc, client.jsm);
  expect(after.storage).toMatchObject({ full: false, probeError: null });
  for (const p of [loop, tools, store, gateway]) expect([p.proc.exitCode, p.proc.signalCode]).toEqual([null, null]);
  return { sids, logFrom };
}

describe("JetStream storage full under a running stack", () => {
  it("full for 3 s (shorter than the lease): no session is dropped, every accepted prompt finishes once", async () => {
    const { sids, logFrom } = await outage(3_000);
    // The owner kept every session and retried its appends: none was dropped or fenced.
    for (const sid of sids) expect(loopLines(logFrom, "session_dropped", sid)).toEqual([]);
  }, 90_000);

  it("full for 20 s (past the lease): every accepted prompt finishes once after the space returns", async () => {
    await outage(20_000, { cli: true });
  }, 120_000);

  it.runIf(process.env.FLEET_SLOW_TESTS === "1")(
    "full for 40 s: every accepted prompt finishes once after the space returns",
    async () => {
      await outage(40_000);
    },
    150_000,
  );
});
