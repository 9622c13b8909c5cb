// Every service and the SDK ride out a nats-server SIGKILL + restart (same port and data) and a 3 s
// SIGSTOP, mid-tool-call and mid-stream: the prompt completes, no command is lost, no process exits.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient, newId, newSessionId } from "@fleet/client";
import type { FleetEvent } from "@fleet/protocol";
import { type NatsServer, type RedisServer, startNats, startRedis } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { followSession } from "../support/follow-session.js";
import { type LoopProcess, scriptedLoopEnv, spawnLoop, waitForLog } from "../support/loop-process.js";
import { type ServiceProcess, spawnService } from "../support/service-process.js";

const TTL = 1_500;
let nats: NatsServer;
let redis: RedisServer;
let dir: string;
let loop: LoopProcess;
let tools: ServiceProcess;
let store: ServiceProcess;
let client: FleetClient;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  nats = await startNats();
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), "fleet-outage-"));
  // Per prompt: a bash call that runs for 4 s (the outage lands in it), then a reply streamed over ~5 s at 40 chunks/s
  // (the second outage lands in it).
  writeFileSync(
    join(dir, "script.json"),
    JSON.stringify({
      chunkChars: 4,
      turns: [
        { content: [{ type: "toolCall", id: "sh", name: "bash", arguments: { command: "sleep 4; echo slept" } }] },
        { text: "y".repeat(800), tokensPerSecond: 40 },
      ],
    }),
  );
  loop = spawnLoop(scriptedLoopEnv(nats.url, join(dir, "script.json"), TTL), "loop-outage");
  await waitForLog(loop, "loop_started", 60_000);
  const common = { NATS_URL: nats.url, FLEET_LEASE_TTL_MS: String(TTL), FLEET_OPS_PORT: "0" };
  tools = spawnService("tools", { ...common, FLEET_WORKSPACE: dir, FLEET_TOOLS: "bash", FLEET_RUNNER_ID: "r-outage" });
  store = spawnService("store", { ...common, REDIS_URL: redis.url, FLEET_WORKER_ID: "store-outage" });
  await Promise.all([tools.waitForLog(undefined, 60_000), store.waitForLog(undefined, 60_000)]);
  client = await FleetClient.connect({ natsUrl: nats.url });
}, 120_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await loop?.kill("SIGKILL");
  await tools?.stop();
  await store?.stop();
  if (nats?.pid) {
    try {
      process.kill(nats.pid, "SIGCONT");
    } catch {
      // already gone
    }
  }
  await nats?.stop();
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const follow = (sessionId: string) => followSession(client, sessionId);

/** Sends a command, re-sending it with the same id until it has an outcome (as a client must). */
async function sendSurely(sessionId: string, type: "append_custom", n: number, id = newId()): Promise<string> {
  let last: unknown;
  for (let attempt = 0; attempt < 60; attempt++) {
    try {
      await client.send(sessionId, { type, customType: "mark", data: { n } }, { commandId: id, timeoutMs: 3_000 });
      return id;
    } catch (err) {
      last = err;
      await sleep(250);
    }
  }
  throw new Error(`command ${id} got no outcome: ${String(last)}`);
}

const count = (events: FleetEvent[], type: FleetEvent["type"]) => events.filter((e) => e.type === type).length;

function expectAllAlive() {
  for (const p of [loop.proc, tools.proc, store.proc]) {
    expect(p.exitCode).toBeNull();
    expect(p.signalCode).toBeNull();
  }
}

/** One outage at the moment `when` says, with commands sent during it; the prompt must complete cleanly. */
async function promptThrough(label: string, outage: () => Promise<void>, when: "tool" | "stream") {
  const sid = newSessionId();
  const events = follow(sid);
  await client.prompt(sid, { text: `go ${label}` });
  if (when === "tool") await events.until("tool start", (e) => count(e, "tool_execution_start") === 1);
  else {
    await events.until("tool end", (e) => count(e, "tool_execution_end") === 1);
    await sleep(500);
  }
  const started = Date.now();
  const during = [1, 2, 3].map((n) => sendSurely(sid, "append_custom", n));
  await outage();
  const ids = await Promise.all(during);
  await events.until("agent_end", (e) => count(e, "agent_end") === 1, 90_000);
  console.log(`${label} (${when}): prompt completed ${Date.now() - started} ms after the outage began`);
  // A write accepted while the run was open is flushed at a turn boundary, or, when it was accepted
  // after the last one (a re-sent command delivered late), just after `agent_end`.
  await events.until("three custom entries", (e) => count(e, "custom") >= 3, 10_000);
  const log = events.seen.map((s) => s.event);
  events.stop();

  // Every tool call ran to its real result: no "No live tool runner", no runner-lost, no abort, no
  // hook timeout. (An outage longer than the lease TTL moves the session and resumes the run; the
  // scripted model then answers the resumed turn with another bash call, so there may be two.)
  const ends = log.filter((e) => e.type === "tool_execution_end");
  expect(ends.length).toBeGreaterThanOrEqual(1);
  for (const end of ends) {
    if (end.type === "tool_execution_end" && end.isError) console.log(JSON.stringify(end.result));
    expect(end.type === "tool_execution_end" && end.isError).toBe(false);
    expect(JSON.stringify(end)).toContain("slept");
  }
  const startIds = log.flatMap((e) => (e.type === "tool_execution_start" ? [e.toolCallId] : []));
  expect(new Set(startIds).size).toBe(startIds.length);
  expect(startIds.length).toBe(ends.length);
  expect(count(log, "agent_start")).toBe(1);
  console.log(`${label} (${when}): ${ends.length} tool call(s), ${count(log, "run_resumed")} resume(s)`);
  // Every command sent during the outage has exactly one outcome, and each custom entry landed once.
  for (const id of ids) {
    const outcomes = log.filter(
      (e) => (e.type === "command_accepted" || e.type === "command_rejected") && e.commandId === id,
    );
    expect(outcomes.map((e) => e.type)).toEqual(["command_accepted"]);
  }
  expect(count(log, "custom")).toBe(3);
  // No duplicate event ids.
  expect(new Set(log.map((e) => e.meta.id)).size).toBe(log.length);
  expectAllAlive();
  // The store still answers and holds the session.
  const tree = await client.getTree(sid, { minSeq: events.seen.at(-1)?.seq ?? 0 });
  expect(JSON.stringify(tree)).toContain("mark");
}

describe("nats-server outages under a running stack", () => {
  it("SIGKILL + restart of nats-server mid-tool-call and mid-stream: prompts complete, nothing lost, nobody exits", async () => {
    const restart = async () => {
      process.kill(nats.pid as number, "SIGKILL");
      await sleep(500);
      await nats.restart();
    };
    await promptThrough("restart", restart, "tool");
    await promptThrough("restart", restart, "stream");
  }, 240_000);

  it("a 3 s SIGSTOP of nats-server mid-tool-call and mid-stream: prompts complete, nothing lost, nobody exits", async () => {
    const pause = async () => {
      process.kill(nats.pid as number, "SIGSTOP");
      await sleep(3_000);
      process.kill(nats.pid as number, "SIGCONT");
    };
    await promptThrough("pause", pause, "tool");
    await promptThrough("pause", pause, "stream");
  }, 240_000);

  it("the only runner is gone for longer than two presence TTLs: a call made meanwhile waits for its restart and runs", async () => {
    const common = { NATS_URL: nats.url, FLEET_LEASE_TTL_MS: String(TTL), FLEET_OPS_PORT: "0" };
    const killed = tools;
    const exited = new Promise((r) => killed.proc.once("exit", r));
    killed.proc.kill("SIGKILL");
    await exited;
    await sleep(TTL + 500); // its presence has expired: no live runner serves bash
    const sid = newSessionId();
    const events = follow(sid);
    await client.prompt(sid, { text: "go without a runner" });
    await events.until("tool start", (e) => count(e, "tool_execution_start") === 1);
    const gapMs = 3 * TTL + 1_000; // longer than the two TTLs a call used to wait
    await sleep(gapMs);
    tools = spawnService("tools", { ...common, FLEET_WORKSPACE: dir, FLEET_TOOLS: "bash", FLEET_RUNNER_ID: "r-later" });
    await tools.waitForLog(undefined, 60_000);
    await events.until("agent_end", (e) => count(e, "agent_end") === 1, 90_000);
    const log = events.seen.map((s) => s.event);
    events.stop();
    const ends = log.filter((e) => e.type === "tool_execution_end");
    expect(ends).toHaveLength(1);
    expect(ends[0]?.type === "tool_execution_end" && ends[0].isError).toBe(false);
    expect(JSON.stringify(ends[0])).toContain("slept");
    console.log(`runner gap: a call waited ${gapMs} ms without a runner and ran on the restarted one`);
  }, 120_000);
});
