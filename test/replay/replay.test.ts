// Replay with overrides (change 51) on real servers: nats-server, redis-server, the session store,
// a tool runner, two loop worker processes and the fake Anthropic API (stateless: equal requests get
// equal replies). Recorded mode reproduces a session exactly; an overridden model changes only the
// model and the cost; a batch spreads over both workers and prints its table; a SIGKILL of the
// worker mid-replay is resumed by the other one, which runs the remaining turn.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient } from "@fleet/client";
import { startGateway } from "@fleet/gateway";
import { type FleetEvent, partitionOf } from "@fleet/protocol";
import { applyTopology, connectNats, createLogger } from "@fleet/runtime";
import { type StoreService, startStoreService } from "@fleet/session-store";
import {
  type FakeAnthropic,
  type NatsServer,
  type RedisServer,
  startFakeAnthropic,
  startNats,
  startRedis,
  statelessResponder,
} from "@fleet/testkit";
import { createToolRunner, defineTool, type ToolRunner } from "@fleet/tools";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { runCli } from "../client/support/run-cli.js";
import { call, gatewayOptions } from "../gateway/support.js";
import { type LoopProcess, loopLeaseHolders, spawnLoop, waitForLog } from "../support/loop-process.js";

const PARTITIONS = 4;
const silent = createLogger("replay-test", { level: "silent" });

let nats: NatsServer;
let redis: RedisServer;
let fake: FakeAnthropic;
let store: StoreService;
let runnerNc: NatsConnection;
let runner: ToolRunner;
let client: FleetClient;
let dir: string;
const loops: LoopProcess[] = [];
let lookups = 0;
let slowJobs = 0;
/** While set, `slowjob` waits for it (the crash test kills a worker meanwhile). */
let hold: Promise<void> | undefined;

const loopEnv = () => ({
  NATS_URL: nats.url,
  FLEET_PROVIDER: "anthropic",
  ANTHROPIC_API_KEY: "sk-replay-fake",
  ANTHROPIC_BASE_URL: fake.url,
  FLEET_LEASE_TTL_MS: "1000",
  FLEET_COALESCE_MS: "10",
  FLEET_SHUTDOWN_GRACE_MS: "500",
  FLEET_OPS_PORT: "0",
});

beforeAll(async () => {
  nats = await startNats();
  redis = await startRedis();
  fake = await startFakeAnthropic();
  // "look up <key>" calls lookup, "run the job" calls slowjob; the final text echoes the prompt.
  fake.respondWith(
    statelessResponder({
      toolsFor: (prompt) => {
        const key = /look up (\w+)/.exec(prompt)?.[1];
        if (key) return [{ suffix: "1", name: "lookup", input: { key } }];
        return prompt.includes("run the job") ? [{ suffix: "1", name: "slowjob", input: {} }] : [];
      },
      finalText: (prompt) => `answered: ${prompt}`,
    }),
  );
  holdersNc = await connectNats({ url: nats.url, name: "replay-test-setup" });
  await applyTopology(holdersNc, { partitions: PARTITIONS, leaseTtlMs: 1_000 });
  store = await startStoreService({
    natsUrl: nats.url,
    redisUrl: redis.url,
    prefix: "fleet:store",
    workerId: "store-replay-test",
    partitions: PARTITIONS,
    leaseTtlMs: 2_000,
    opsPort: 0,
    cacheEntries: 100_000,
    maxBatch: 500,
    logger: silent,
  });
  dir = mkdtempSync(join(tmpdir(), "fleet-replay-"));
  runnerNc = await connectNats({ url: nats.url, name: "replay-test-runner" });
  runner = createToolRunner({
    nc: runnerNc,
    tools: [
      defineTool({
        name: "lookup",
        description: "looks a key up (each call answers with its own number)",
        parameters: z.object({ key: z.string() }),
        execute: async ({ key }) => ({ content: [{ type: "text", text: `value of ${key} (#${++lookups})` }] }),
      }),
      defineTool({
        name: "slowjob",
        description: "runs until the test lets it finish",
        parameters: z.object({}),
        execute: async () => {
          slowJobs++;
          await hold;
          return { content: [{ type: "text", text: "job done" }] };
        },
      }),
    ],
    workspaceRoot: dir,
    logger: silent,
  });
  const started = await runner.start();
  if (!started.ok) throw new Error(`tool runner did not start: ${JSON.stringify(started)}`);
  loops.push(spawnLoop(loopEnv(), "loop-a"), spawnLoop(loopEnv(), "loop-b"));
  for (const p of loops) await waitForLog(p, "loop_started", 90_000);
  for (let i = 0; new Set((await loopLeaseHolders(setupNc())).values()).size < 2; i++) {
    if (i > 200) throw new Error("the two loop workers did not share the partitions");
    await new Promise((r) => setTimeout(r, 100));
  }
  client = await FleetClient.connect({ natsUrl: nats.url, name: "replay-test-client" });
}, 120_000);

let holdersNc: NatsConnection | undefined;
/** The connection for lease checks. */
function setupNc(): NatsConnection {
  if (!holdersNc) throw new Error("not connected");
  return holdersNc;
}

afterAll(async () => {
  for (const p of loops) await p.kill("SIGKILL");
  await client?.close();
  await holdersNc?.close();
  await runner?.stop({ graceMs: 0 }).catch(() => undefined);
  await runnerNc?.close();
  await store?.stop().catch(() => undefined);
  await fake?.stop();
  await redis?.stop();
  await nats?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Follows the session until it logged `runs` agent_end events. */
async function waitRuns(sessionId: string, runs: number, timeoutMs = 30_000): Promise<FleetEvent[]> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const seen: FleetEvent[] = [];
  try {
    for await (const { event } of client.events(sessionId, { signal: abort.signal })) {
      seen.push(event);
      if (seen.filter((e) => e.type === "agent_end").length >= runs) return seen;
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  throw new Error(`${sessionId}: ${runs} run(s) not ended within ${timeoutMs} ms`);
}

/** A source session: one prompt per text, each run to its end. */
async function makeSource(sessionId: string, texts: readonly string[]): Promise<void> {
  for (const [i, text] of texts.entries()) {
    await client.prompt(sessionId, text);
    await waitRuns(sessionId, i + 1);
  }
}

const fleet = (args: string[]) => runCli(["--nats", nats.url, ...args], { cwd: dir, timeoutMs: 120_000 });

describe("replay with overrides / real loop workers", () => {
  it("recorded mode without overrides reproduces the session exactly: the diff is empty, no tool runs", async () => {
    await makeSource("src-1", ["look up alpha", "say hi"]);
    const ran = lookups;
    const { sessionId } = await client.replayWith("src-1");
    const progress = await client.waitForReplay(sessionId, { timeoutMs: 60_000 });
    expect(progress).toMatchObject({ done: true, turnsRun: 2, stopped: undefined });
    expect(progress.replayOf).toMatchObject({
      sessionId: "src-1",
      fromEntry: null,
      kept: 0,
      overrides: {},
      toolsMode: "recorded",
      recorded: [{ toolName: "lookup", args: { key: "alpha" }, isError: false }],
    });
    expect(progress.replayOf?.turns.map((m) => m.content)).toEqual([
      [{ type: "text", text: "look up alpha" }],
      [{ type: "text", text: "say hi" }],
    ]);
    expect(lookups).toBe(ran);
    const diff = await client.diff("src-1", sessionId);
    expect(diff.differences).toEqual([]);
    expect(diff.b.map((t) => t.toolCalls.map((c) => c.result))).toEqual([["value of alpha (#1)"], []]);

    const cli = await fleet(["diff", "src-1", sessionId]);
    expect(cli.stderr).toBe("");
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain("nothing differs: 2 turn(s) with the same messages, tool calls, tokens and cost");
  });

  it("an overridden model changes only the model and the cost; live tools run again and diverge", async () => {
    const cli = await fleet(["replay", "src-1", "--model", "claude-haiku-4-5", "--json"]);
    expect(cli.stderr).toBe("");
    const out = JSON.parse(cli.stdout) as {
      sessionId: string;
      diff: { differences: { field: string; turn: number }[] };
    };
    expect(out.diff.differences.map((d) => `${d.turn}:${d.field}`)).toEqual(["0:model", "0:cost", "1:model", "1:cost"]);
    const requests = fake.requests.filter(
      (r) => (r.body as { model?: string } | undefined)?.model === "claude-haiku-4-5",
    );
    expect(requests).toHaveLength(3);
    const diff = await client.diff("src-1", out.sessionId);
    expect(diff.b.map((t) => t.model)).toEqual(["anthropic/claude-haiku-4-5", "anthropic/claude-haiku-4-5"]);
    expect(diff.b.map((t) => [t.user, t.assistant, t.inputTokens, t.outputTokens])).toEqual(
      diff.a.map((t) => [t.user, t.assistant, t.inputTokens, t.outputTokens]),
    );

    // Live: the lookup runs again and answers with its own number.
    const ran = lookups;
    const live = await client.replayWith("src-1", { toolsMode: "live" });
    await client.waitForReplay(live.sessionId, { timeoutMs: 60_000 });
    expect(lookups).toBe(ran + 1);
    const liveDiff = await client.diff("src-1", live.sessionId);
    expect(liveDiff.divergedToolCalls).toBe(1);
    expect(liveDiff.differences.map((d) => `${d.turn}:${d.field}`)).toContain("0:tool_calls");
  });

  it("forks at --from: keeps the branch up to the entry and runs only the later turns", async () => {
    const tree = await client.getTree("src-1");
    const entries = tree.entries;
    const secondUser = entries.findLast((e) => e.type === "message" && e.message.role === "user");
    const before = entries[entries.indexOf(secondUser as (typeof entries)[number]) - 1];
    const cli = await fleet(["replay", "src-1", "--from", before?.id as string, "--system", "Be terse.", "--json"]);
    expect(cli.stderr).toBe("");
    const out = JSON.parse(cli.stdout) as { sessionId: string; progress: { turnsRun: number } };
    expect(out.progress.turnsRun).toBe(1);
    const progress = await client.replayProgress(out.sessionId);
    expect(progress.replayOf).toMatchObject({ fromEntry: before?.id, overrides: { systemPrompt: "Be terse." } });
    expect(JSON.stringify(fake.requests.at(-1)?.body)).toContain("Be terse.");
    expect((await client.diff("src-1", out.sessionId)).differences).toEqual([]);
  });

  it("POST /v1/sessions {replayOf} replays through the gateway; bad requests get JSON errors", async () => {
    const gateway = await startGateway(gatewayOptions(nats.url));
    try {
      await gateway.ready;
      const created = await call(gateway.url, "POST", "/v1/sessions", {
        body: { sessionId: "gw-replay", replayOf: { sessionId: "src-1", overrides: { thinkingLevel: "high" } } },
      });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ sessionId: "gw-replay" });
      const progress = await client.waitForReplay("gw-replay", { timeoutMs: 60_000 });
      expect(progress).toMatchObject({ done: true, turnsRun: 2, replayOf: { overrides: { thinkingLevel: "high" } } });
      expect(JSON.stringify(fake.requests.at(-1)?.body)).toContain('"thinking"');
      expect((await client.diff("src-1", "gw-replay")).differences).toEqual([]);

      const both = await call(gateway.url, "POST", "/v1/sessions", {
        body: { replayOf: { sessionId: "src-1" }, forkFrom: { sessionId: "src-1", entryId: "e" } },
      });
      expect([both.status, both.body.error?.code ?? both.body.code]).toEqual([400, "invalid"]);
      const missing = await call(gateway.url, "POST", "/v1/sessions", { body: { replayOf: { sessionId: "no-such" } } });
      expect(missing.status).toBe(404);
      expect(missing.text).toContain("Session no-such not found");
    } finally {
      await gateway.close();
    }
  });

  it("a batch replay of a search spreads over both workers and prints its table", async () => {
    const sources = Array.from({ length: 12 }, (_, i) => `batch-${i}`);
    await Promise.all(sources.map((s, i) => makeSource(s, [`look up k${i}`])));
    await expect
      .poll(async () => (await client.searchSessions("batch-")).sessions.length, { timeout: 20_000 })
      .toBe(12);
    const cli = await fleet(["replay", "--sessions", "batch-", "--model", "claude-haiku-4-5"]);
    expect(cli.stderr).toBe("");
    expect(cli.code).toBe(0);
    const lines = cli.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^source\s+replay\s+turns\s+diverged\s+tokens in\/out\s+cost\s+errors$/);
    expect(
      lines
        .slice(1, 13)
        .map((l) => l.split(/\s+/)[0])
        .sort(),
    ).toEqual(sources.slice().sort());
    for (const line of lines.slice(1, 13))
      expect(line).toMatch(/^batch-\d+\s+\S+\s+1\s+0\s+\d+\/\d+\s+\$\d\.\d{4}\s+0$/);
    expect(lines[13]).toMatch(
      /^replayed 12 session\(s\): 12 turn\(s\), 0 tool call\(s\) diverged, tokens in \d+ · out \d+, \$\d\.\d{4}, 0 with errors$/,
    );
    // Both workers ran replays: each session's owner is announced on its log.
    const replays = lines.slice(1, 13).map((l) => l.split(/\s+/)[1] as string);
    const owners = new Set<string>();
    for (const r of replays) {
      const events = await waitRuns(r, 1);
      for (const e of events) if (e.type === "owner_change") owners.add(e.workerId);
    }
    expect([...owners].sort()).toEqual(["loop-a", "loop-b"]);
  });

  it("resumes a replay whose worker is SIGKILLed mid-turn, and runs its remaining turn", async () => {
    await makeSource("src-slow", ["run the job", "say bye"]);
    let release: () => void = () => undefined;
    hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held = await loopLeaseHolders(setupNc());
    let victim = "";
    for (let i = 0; !victim; i++)
      if (held.get(partitionOf(`replay-crash-${i}`, PARTITIONS)) === "loop-b") victim = `replay-crash-${i}`;
    const jobs = slowJobs;
    await client.replayWith("src-slow", { sessionId: victim, toolsMode: "live" });
    await expect.poll(() => slowJobs, { timeout: 20_000 }).toBe(jobs + 1);
    const loopB = loops.find((p) => p.workerId === "loop-b");
    await loopB?.kill("SIGKILL");
    release();
    const progress = await client.waitForReplay(victim, { timeoutMs: 60_000 });
    expect(progress).toMatchObject({ done: true, turnsRun: 2 });
    const events = await waitRuns(victim, 2);
    expect(events.some((e) => e.type === "run_resumed")).toBe(true);
    const owners = events
      .filter((e) => e.type === "owner_change")
      .map((e) => (e.type === "owner_change" ? e.workerId : ""));
    expect(owners).toEqual(["loop-b", "loop-a"]);
    // The second turn was decided by the worker that took over.
    const second = events.findIndex((e) => e.type === "command_accepted" && e.commandId === "replay-turn-1");
    expect(second).toBeGreaterThan(events.findIndex((e) => e.type === "run_resumed"));
    expect(slowJobs).toBe(jobs + 1);
    expect((await client.diff("src-slow", victim)).differences).toEqual([]);
  });

  it("respects budgets: a turn over the tenant's daily limit is refused and ends the replay, shown as an error", async () => {
    await client.setTenantLimits({ outputTokens: 1 });
    try {
      // The workers follow the limits with a KV watch.
      await new Promise((r) => setTimeout(r, 500));
      const cli = await fleet(["replay", "--sessions", "src-", "--tools-mode", "recorded"]);
      expect(cli.stderr).toBe("");
      expect(cli.code).toBe(1);
      const lines = cli.stdout.trim().split("\n");
      expect(lines.slice(1, 3).map((l) => l.split(/\s+/)[0])).toEqual(["src-1", "src-slow"]);
      for (const line of lines.slice(1, 3)) {
        expect(line).toMatch(
          /\s0\s+1\s+0\/0\s+\$0\.0000\s+1: turn 0: budget_exceeded Budget exceeded: tenant output tokens \d+\/1$/,
        );
      }
      // The source's calls the replay never made count as diverged.
      expect(lines[3]).toBe(
        "replayed 2 session(s): 0 turn(s), 2 tool call(s) diverged, tokens in 0 · out 0, $0.0000, 2 with errors",
      );
    } finally {
      await client.setTenantLimits(null);
    }
  });
});
