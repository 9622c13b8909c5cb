// A budget survives a worker crash because the spend is folded from the log: a loop process that
// dies (SIGKILL) mid-stream leaves its spend in the log, and the worker that takes the session over
// enforces it. Real loop processes, real nats-server, the real Anthropic SDK against the fake server.
import { type FleetEvent, KV_BUCKETS, SPEND_KEYS, TenantSpendRecord, utcDayOf } from "@fleet/protocol";
import { fakeReply, fakeText } from "@fleet/testkit";
import { Kvm } from "@nats-io/kv";
import { describe, expect, it } from "vitest";
import { useLoopCrashWorld } from "../support/loop-crash-world.js";
import { commander } from "../support/loop-harness.js";
import { waitForLog } from "../support/loop-process.js";

const world = useLoopCrashWorld({ name: "budget-crash-test", leaseTtlMs: 1_000 });

const SID = "crash-budget";
const outcomes = (events: FleetEvent[]) =>
  events.flatMap((e) => (e.type === "command_rejected" ? [`${e.code}: ${e.reason}`] : []));
const streamedChars = (events: FleetEvent[]) =>
  events
    .flatMap((e) => (e.type === "message_update" ? e.deltas : []))
    .reduce((n, d) => n + (d.type === "text_delta" ? d.delta.length : 0), 0);

describe("loop service / a budget survives a worker crash", () => {
  it("the new owner counts what streamed before the crash and enforces the session's limit", async () => {
    const a = world.spawn("loop-budget-a");
    await waitForLog(a, "loop_started");
    const cmd = commander(world.nc);
    // 1. A spends 40 output tokens (exact usage) of the session's 60.
    world.fake.script(
      fakeReply("first", { usage: { input_tokens: 10, output_tokens: 40 } }),
      fakeReply(
        [
          fakeText(
            "y".repeat(400),
            Array.from({ length: 40 }, () => "y".repeat(10)),
          ),
        ],
        {
          usage: { input_tokens: 10, output_tokens: 100 },
          eventDelayMs: 150,
        },
      ),
      // the new owner's call again: 4-character deltas, so chars/4 is exact
      fakeReply(
        [
          fakeText(
            "z".repeat(400),
            Array.from({ length: 100 }, () => "zzzz"),
          ),
        ],
        {
          usage: { input_tokens: 10, output_tokens: 100 },
          eventDelayMs: 5,
        },
      ),
    );
    await cmd.send(SID, { type: "create_session", config: { budget: { session: { outputTokens: 60 } } } });
    await cmd.send(SID, { type: "prompt", text: "one" });
    await cmd.waitFor(SID, (ev) => ev.some((e) => e.type === "agent_end"), 15_000);
    // 2. The second answer streams slowly; A dies once 60 to 79 characters of it are in the log
    //    (40 + 15..20 tokens: A's guard stops at 80).
    await cmd.send(SID, { type: "prompt", text: "two" });
    const firstRun = (await cmd.events(SID)).length;
    await cmd.waitFor(SID, (ev) => streamedChars(ev.slice(firstRun)) >= 60, 15_000);
    await a.kill("SIGKILL");
    const cut = await cmd.events(SID);
    const streamed = streamedChars(cut.slice(firstRun));
    expect(cut.filter((e) => e.type === "agent_end")).toHaveLength(1);
    expect(streamed).toBeGreaterThanOrEqual(60);
    expect(streamed).toBeLessThan(80);
    expect(await world.fake.waitForOutcome(1, 10_000)).not.toBe("completed");

    // 3. B takes the partition over: it closes the cut message (its streamed text counts
    //    ceil(streamed/4) tokens) and calls the LLM again, which it cuts once the session's 60 are spent:
    //    after 4·(20 − ceil(streamed/4)) characters, not the 80 a worker that forgot the cut message
    //    would allow.
    const b = world.spawn("loop-budget-b");
    const spent = 60;
    const allowed = 4 * (20 - Math.ceil(streamed / 4));
    const events = await cmd.waitFor(SID, (ev) => ev.filter((e) => e.type === "agent_end").length === 2, 20_000);
    const resumed = events.slice(cut.length);
    const assistants = resumed.flatMap((e) =>
      e.type === "message_end" && e.message.role === "assistant" ? [e.message] : [],
    );
    expect(assistants.map((m) => [m.stopReason, m.errorMessage, m.errorReason])).toEqual([
      ["error", expect.stringMatching(/^Run interrupted while streaming/), undefined],
      ["error", "Budget exceeded: session output tokens 60/60", "budget_exceeded"],
    ]);
    const text = assistants[1]?.content.map((c) => (c.type === "text" ? c.text : "")).join("");
    expect(text).toBe("z".repeat(allowed));
    expect(allowed).toBeLessThan(80);
    expect(resumed.some((e) => e.type === "owner_change" && e.workerId === "loop-budget-b")).toBe(true);
    expect(world.fake.requests).toHaveLength(3);
    expect(await world.fake.waitForOutcome(2, 10_000)).toBe("client_closed");

    // 4. A new prompt is refused by B at its start; the tenant's record of the day holds the same spend.
    await cmd.send(SID, { type: "prompt", text: "three" });
    const after = await cmd.waitFor(SID, (ev) => outcomes(ev).length === 1, 10_000);
    expect(outcomes(after)).toEqual([`budget_exceeded: Budget exceeded: session output tokens ${spent}/60`]);
    const kv = await new Kvm(world.nc).open(KV_BUCKETS.spend.name);
    const day = utcDayOf(Date.now());
    // The record is written a moment after the event it counts (PROTOCOL "Budgets"): read until it does.
    const recorded = async () => TenantSpendRecord.parse((await kv.get(SPEND_KEYS.session(day, SID)))?.json());
    let record = await recorded();
    for (const until = Date.now() + 10_000; record.outputTokens !== spent && Date.now() < until; ) {
      await new Promise((r) => setTimeout(r, 100));
      record = await recorded();
    }
    expect(record.outputTokens).toBe(spent);
    await waitForLog(b, "budget_exceeded");
  });
});
