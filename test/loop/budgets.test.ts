// Budgets through the running loop service: run, session and tenant limits, each reached while an
// answer streams (the real Anthropic SDK against the fake server; the stream is cut) and each
// refused at the start of a run. Real nats-server.
import {
  type AssistantMessage,
  BUDGET_KEYS,
  type FleetEvent,
  KV_BUCKETS,
  PartitionDayTotal,
  partitionOf,
  SPEND_KEYS,
  TenantSpendRecord,
  utcDayOf,
} from "@fleet/protocol";
import { createLogger } from "@fleet/runtime";
import { startStoreService } from "@fleet/session-store";
import { fakeReply, fakeText, fakeToolUse, startRedis } from "@fleet/testkit";
import { Kvm } from "@nats-io/kv";
import { describe, expect, it } from "vitest";
import { runCli } from "../client/support/run-cli.js";
import { notation } from "../support/loop-harness.js";
import { useAnthropicWorker } from "../support/worker-world.js";

const w = useAnthropicWorker({ coalesceMs: 10 });

/** 400 characters in 40 deltas of 10 (100 output tokens by chars/4), streamed 5 ms apart. */
const CHUNKS = Array.from({ length: 40 }, (_, i) => `chunk-${String(i).padStart(2, "0")}. `);
const LONG = CHUNKS.join("");
const longReply = (input = 20) =>
  fakeReply([fakeText(LONG, CHUNKS)], { usage: { input_tokens: input, output_tokens: 100 }, eventDelayMs: 5 });
const shortReply = (output: number) => fakeReply("done", { usage: { input_tokens: 20, output_tokens: output } });

const ended = (events: FleetEvent[]) => events.filter((e) => e.type === "agent_end").length;
const outcomes = (events: FleetEvent[]) =>
  events.flatMap((e) =>
    e.type === "command_accepted" || e.type === "command_rejected"
      ? [e.type === "command_rejected" ? `${e.code}: ${e.reason}` : "accepted"]
      : [],
  );
const lastAssistant = (events: FleetEvent[]): AssistantMessage | undefined => {
  for (const e of [...events].reverse()) {
    if (e.type === "message_end" && e.message.role === "assistant") return e.message;
  }
  return undefined;
};
const textOf = (m: AssistantMessage | undefined) =>
  (m?.content ?? []).map((c) => (c.type === "text" ? c.text : "")).join("");

async function create(sessionId: string, budget: object) {
  await w.cmd.send(sessionId, {
    type: "create_session",
    config: { budget, model: { provider: "anthropic", modelId: "claude-sonnet-5" } },
  });
  await w.cmd.waitFor(sessionId, (ev) => ev.some((e) => e.type === "session_created"));
}

/** Sends a prompt and waits for its outcome (and, when accepted, for its run to end). */
async function prompt(sessionId: string, text = "go") {
  const before = await w.cmd.events(sessionId);
  const runs = ended(before);
  const decided = outcomes(before).length;
  await w.cmd.send(sessionId, { type: "prompt", text });
  const events = await w.cmd.waitFor(sessionId, (ev) => {
    const o = outcomes(ev);
    return o.length > decided && (o.at(-1) !== "accepted" || ended(ev) > runs);
  });
  return { events, outcome: outcomes(events).at(-1), message: lastAssistant(events.slice(before.length)) };
}

describe("loop service / budgets, reached while streaming and at the start", () => {
  // First: the tenant's day spend counts every session of this server.
  it("a tenant's daily output tokens over all its sessions (limits in KV fleet_budgets, totals in fleet_spend_totals, records in fleet_spend)", async () => {
    const kv = await new Kvm(w.nc).open(KV_BUCKETS.budgets.name);
    await kv.put(BUDGET_KEYS.limits, JSON.stringify({ outputTokens: 80 }));
    try {
      // the worker follows the bucket with a KV watch
      await new Promise((r) => setTimeout(r, 300));
      w.fake.reset();
      w.fake.script(shortReply(50), longReply());
      const one = await prompt("bud-tenant-1");
      expect(one.message?.stopReason).toBe("stop");
      const day = utcDayOf(Date.now());
      const spendKv = await new Kvm(w.nc).open(KV_BUCKETS.spend.name);
      const key = SPEND_KEYS.session(day, "bud-tenant-1");
      await waitUntil(async () => (await spendKv.get(key))?.operation === "PUT");
      const record = TenantSpendRecord.parse((await spendKv.get(key))?.json());
      expect(record).toMatchObject({ sessionId: "bud-tenant-1", day, inputTokens: 20, outputTokens: 50 });
      // The session's partition's total of the day counts it, and nothing is pending once the record is written.
      const totalKey = SPEND_KEYS.total(day, partitionOf("bud-tenant-1", 16));
      const totalsKv = await new Kvm(w.nc).open(KV_BUCKETS.spendTotals.name);
      await waitUntil(async () => PartitionDayTotal.parse((await totalsKv.get(totalKey))?.json()).pending.length === 0);
      expect(PartitionDayTotal.parse((await totalsKv.get(totalKey))?.json())).toMatchObject({ outputTokens: 50 });

      const two = await prompt("bud-tenant-2");
      expect(two.message?.errorMessage).toBe("Budget exceeded: tenant output tokens 80/80");
      expect(textOf(two.message)).toBe(CHUNKS.slice(0, 12).join(""));

      const three = await prompt("bud-tenant-3");
      expect(three.outcome).toBe("budget_exceeded: Budget exceeded: tenant output tokens 80/80");
      expect(w.fake.requests).toHaveLength(2);

      // Raising the tenant's limit lets the tenant go on.
      await kv.put(BUDGET_KEYS.limits, JSON.stringify({ outputTokens: 1000 }));
      w.fake.script(shortReply(5));
      await waitUntil(async () => (await prompt("bud-tenant-3")).outcome === "accepted");
    } finally {
      await kv.delete(BUDGET_KEYS.limits);
    }
  });

  it("a session's output tokens: the stream is cut at the limit; the next prompt is refused", async () => {
    w.fake.reset();
    w.fake.script(longReply());
    await create("bud-session", { session: { outputTokens: 50 } });
    const first = await prompt("bud-session");
    expect(first.outcome).toBe("accepted");
    expect(first.message?.stopReason).toBe("error");
    expect(first.message?.errorReason).toBe("budget_exceeded");
    expect(first.message?.errorMessage).toBe("Budget exceeded: session output tokens 50/50");
    // 200 characters streamed = 50 tokens; the rest of the reply was never read
    expect(textOf(first.message)).toBe(CHUNKS.slice(0, 20).join(""));
    expect(first.message?.usage.output).toBe(50);
    // the provider counts input only at the end: the cut message carries pi's estimate of the request
    expect(first.message?.usage.input).toBeGreaterThan(0);
    expect(notation(first.events).slice(-3)).toEqual(["me:assistant(error)", "turn_end", "agent_end"]);
    expect(await w.fake.waitForOutcome(0)).toBe("client_closed");

    const second = await prompt("bud-session");
    expect(second.outcome).toBe("budget_exceeded: Budget exceeded: session output tokens 50/50");
    expect(w.fake.requests).toHaveLength(1);
  });

  it("a session's input tokens: the provider's exact count is reconciled at message_end and then enforced", async () => {
    w.fake.reset();
    w.fake.script(fakeReply("done", { usage: { input_tokens: 120, output_tokens: 5 } }));
    await create("bud-input", { session: { inputTokens: 100 } });
    const first = await prompt("bud-input");
    expect(first.message?.stopReason).toBe("stop");
    expect(first.message?.usage.input).toBe(120);
    const refused = await prompt("bud-input");
    expect(refused.outcome).toMatch(/^budget_exceeded: Budget exceeded: session input tokens \d+\/100$/);
    expect(w.fake.requests).toHaveLength(1);
  });

  it("a session's output tokens reconciled from the exact usage stop the run before its next LLM call", async () => {
    w.fake.reset();
    w.fake.script(
      fakeReply([fakeToolUse("read", { path: "a.txt" }, { id: "toolu_b1" })], {
        stopReason: "tool_use",
        usage: { input_tokens: 10, output_tokens: 70 },
      }),
    );
    await create("bud-turns", { session: { outputTokens: 60 } });
    const run = await prompt("bud-turns");
    // the tool call streamed ~5 tokens of JSON; its exact usage at message_end says 70
    const assistants = run.events.flatMap((e) =>
      e.type === "message_end" && e.message.role === "assistant" ? [e.message] : [],
    );
    expect(assistants.map((m) => [m.stopReason, m.usage.output])).toEqual([
      ["toolUse", 70],
      ["error", 0],
    ]);
    expect(run.message?.errorMessage).toBe("Budget exceeded: session output tokens 70/60");
    expect(run.message?.errorReason).toBe("budget_exceeded");
    expect(notation(run.events).slice(-4)).toEqual(["ms:assistant", "me:assistant(error)", "turn_end", "agent_end"]);
    expect(w.fake.requests).toHaveLength(1);
  });

  it("a run's output tokens: each run is cut at its own limit; a prompt too large for a run is refused", async () => {
    w.fake.reset();
    w.fake.script(longReply(), longReply());
    await create("bud-run", { run: { outputTokens: 30, inputTokens: 500 } });
    for (const _ of [1, 2]) {
      const run = await prompt("bud-run");
      expect(run.outcome).toBe("accepted");
      expect(run.message?.errorMessage).toBe("Budget exceeded: run output tokens 30/30");
      expect(textOf(run.message)).toBe(CHUNKS.slice(0, 12).join(""));
    }
    expect(w.fake.requests).toHaveLength(2);
    // ~2000 chars of prompt is ~500 tokens of input before anything streams
    const refused = await prompt("bud-run", "x".repeat(2000));
    expect(refused.outcome).toMatch(/^budget_exceeded: Budget exceeded: run input tokens \d+\/500$/);
    expect(w.fake.requests).toHaveLength(2);
  });

  it("the loop's metrics count tokens, cost and budgets reached", async () => {
    const tokens = await w.worker.metrics.llmTokens.get();
    const output = tokens.values.find((v) => v.labels.kind === "output")?.value ?? 0;
    expect(output).toBeGreaterThanOrEqual(50 + 30 + 50 + 30 + 30);
    const reached = new Map(
      (await w.worker.metrics.budgetExceeded.get()).values.map((v) => [`${v.labels.scope}/${v.labels.when}`, v.value]),
    );
    expect(Object.fromEntries(reached)).toMatchObject({
      "tenant/stream": 1,
      "session/stream": 1,
      "session/start": 1,
      "session/decide": 2,
      "run/stream": 2,
      "run/decide": 1,
    });
    expect(reached.get("tenant/decide")).toBeGreaterThanOrEqual(1);
    expect((await w.worker.metrics.llmCost.get()).values[0]?.value).toBeGreaterThan(0);
  });

  it("a tenant limit set while a message streams cuts that message at its next delta", async () => {
    const kv = await new Kvm(w.nc).open(KV_BUCKETS.budgets.name);
    w.fake.reset();
    // 40 deltas 100 ms apart: about 4 s of streaming with no budget in force at the start.
    w.fake.script(
      fakeReply([fakeText(LONG, CHUNKS)], { usage: { input_tokens: 20, output_tokens: 100 }, eventDelayMs: 100 }),
    );
    try {
      const sessionId = "bud-late-limit";
      await w.cmd.send(sessionId, { type: "prompt", text: "go" });
      await w.cmd.waitFor(sessionId, (ev) => ev.filter((e) => e.type === "message_update").length >= 3);
      await kv.put(BUDGET_KEYS.limits, JSON.stringify({ outputTokens: 1 }));
      const events = await w.cmd.waitFor(sessionId, (ev) => ended(ev) === 1);
      const message = lastAssistant(events);
      expect(message?.errorMessage).toMatch(/^Budget exceeded: tenant output tokens \d+\/1$/);
      const kept = textOf(message).length / (CHUNKS[0] ?? "").length;
      expect(kept).toBeGreaterThanOrEqual(3);
      expect(kept).toBeLessThan(CHUNKS.length);
    } finally {
      await kv.delete(BUDGET_KEYS.limits);
    }
  });

  it("fleet replay and fleet sessions show the spend so far and the budgets", async () => {
    const redis = await startRedis();
    const store = await startStoreService({
      natsUrl: w.server.url,
      redisUrl: redis.url,
      prefix: "fleet:store",
      workerId: "store-budgets",
      partitions: 16,
      leaseTtlMs: 1_500,
      opsPort: 0,
      cacheEntries: 100_000,
      maxBatch: 500,
      logger: createLogger("store-test", { level: "silent" }),
    });
    try {
      const env = { NATS_URL: w.server.url, FLEET_HOME: "/nonexistent-fleet-home" };
      const replay = await runCli(["replay", "bud-session"], { env });
      expect(replay.code).toBe(0);
      expect(replay.stdout).toMatch(
        /^spend: session in \d+ · out 50 · \$0\.\d{4} {3}last run in \d+ · out 50 · \$0\.\d{4}$/m,
      );
      expect(replay.stdout).toContain("budget: run none   session out ≤ 50\n");
      expect(replay.stdout).toContain("error: Budget exceeded: session output tokens 50/50\n");
      const json = JSON.parse((await runCli(["replay", "bud-session", "--json"], { env })).stdout) as {
        spend: { session: { outputTokens: number }; budget: unknown };
      };
      expect(json.spend.session.outputTokens).toBe(50);
      expect(json.spend.budget).toEqual({ session: { outputTokens: 50 } });

      let sessions = "";
      await waitUntil(async () => {
        sessions = (await runCli(["sessions"], { env })).stdout;
        return sessions.includes("bud-run");
      }, 20_000);
      const row = sessions.split("\n").find((l) => l.startsWith("bud-run "));
      expect(row).toMatch(/^bud-run\s+idle\s+\d+\s+[\d-]+ [\d:]+\s+60\/\$0\.\d{4}/);
      expect(sessions).toMatch(
        /^tenant spend \d{4}-\d{2}-\d{2} \(UTC\): in \d+ · out \d+ · \$\d+\.\d{4} {3}daily budget: none$/m,
      );
    } finally {
      await store.stop();
      await redis.stop();
    }
  }, 60_000);
});

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("condition not met in time");
}
