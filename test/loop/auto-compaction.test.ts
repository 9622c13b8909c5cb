// Automatic compaction through the running loop service: the real @anthropic-ai/sdk against the fake
// Anthropic server, reporting a context near the window (threshold) or answering "prompt is too long"
// (overflow).
import { type FleetEvent, foldSessionEvents } from "@fleet/protocol";
import { fakeContextOverflow, fakeReply, type RecordedRequest } from "@fleet/testkit";
import { describe, expect, it } from "vitest";
import { notation } from "../support/loop-harness.js";
import { useAnthropicWorker } from "../support/worker-world.js";

const w = useAnthropicWorker();

/** The worker's model (`test-model`) is not in the table: a 200 000-token window; pi's reserve is 16 384. */
const OVER_THRESHOLD = 190_000;
const runs = (n: number) => (events: FleetEvent[]) => events.filter((e) => e.type === "agent_end").length >= n;
const isSummaryRequest = (r: RecordedRequest | undefined) =>
  JSON.stringify(r?.body?.system ?? "").includes("context summarization assistant");
const requestText = (r: RecordedRequest | undefined) => JSON.stringify(r?.body?.messages ?? []);
const fromRun = (events: FleetEvent[], n: number) => {
  const starts = events.flatMap((e, i) => (e.type === "agent_start" ? [i] : []));
  return events.slice(starts[n - 1]);
};

async function createWithSmallKeep(sid: string): Promise<void> {
  await w.cmd.send(sid, { type: "create_session" });
  await w.cmd.send(sid, { type: "set_compaction_settings", keepRecentTokens: 1 });
  await w.cmd.waitFor(sid, (ev) => ev.some((e) => e.type === "config_change"));
}

describe("loop service / automatic compaction (fake Anthropic, real SDK)", () => {
  it("threshold: a reply reporting a context past the window - reserve is compacted before the next call; the run goes on", async () => {
    w.fake.reset();
    const sid = "auto-threshold";
    await createWithSmallKeep(sid);
    w.fake.script(
      fakeReply("first answer", { usage: { input_tokens: OVER_THRESHOLD, output_tokens: 20 } }),
      fakeReply("## Goal\nAnswer the questions.", { usage: { input_tokens: 700, output_tokens: 30 } }),
      fakeReply("second answer", { usage: { input_tokens: 900, output_tokens: 10 } }),
    );
    // queued while idle: the follow-up continues the prompt's run after its first turn
    await w.cmd.send(sid, { type: "follow_up", text: "second question" });
    await w.cmd.send(sid, { type: "prompt", text: "first question" });
    const events = await w.cmd.waitFor(sid, runs(1));
    const run = fromRun(events, 1);
    expect(notation(run)).toEqual([
      "agent_start",
      "turn_start",
      "ms:user",
      "me:user",
      "ms:assistant",
      "me:assistant(stop)",
      "turn_end",
      "turn_start",
      "queue_update",
      "ms:user",
      "me:user",
      "compaction_start",
      "compaction",
      "compaction_end",
      "ms:assistant",
      "me:assistant(stop)",
      "turn_end",
      "agent_end",
    ]);
    const start = run.find((e) => e.type === "compaction_start");
    expect(start?.type === "compaction_start" && start.reason).toBe("threshold");
    const end = run.find((e) => e.type === "compaction_end");
    expect(end).toMatchObject({ reason: "threshold", aborted: false, willRetry: false });
    // the follow-up is kept; the first exchange is summarised
    const followUp = run.filter((e) => e.type === "message_end")[2];
    const entry = run.find((e) => e.type === "compaction");
    expect(entry?.type === "compaction" && entry.firstKeptEntryId).toBe(followUp?.meta.id);
    expect(entry?.type === "compaction" && entry.summary).toBe("## Goal\nAnswer the questions.");
    expect(entry?.type === "compaction" && entry.tokensBefore).toBeGreaterThan(OVER_THRESHOLD);
    // the summary's call is spent like the run's own calls (Fleet addition: the entry's usage)
    expect(entry?.type === "compaction" && entry.usage).toMatchObject({ input: 700, output: 30 });
    const spent = foldSessionEvents(events).spend.session;
    expect([spent.inputTokens, spent.outputTokens]).toEqual([OVER_THRESHOLD + 700 + 900, 20 + 30 + 10]);
    // the requests: reply, pi's summary request, then the call on the compacted context
    expect(w.fake.requests).toHaveLength(3);
    const [, summary, next] = w.fake.requests;
    expect(isSummaryRequest(summary)).toBe(true);
    expect(summary?.body?.max_tokens).toBe(Math.floor(0.8 * 16_384));
    expect(requestText(summary)).toContain("[User]: first question");
    expect(requestText(summary)).toContain("[Assistant]: first answer");
    expect(isSummaryRequest(next)).toBe(false);
    expect(requestText(next)).toContain("Answer the questions.");
    expect(requestText(next)).toContain("second question");
    expect(requestText(next)).not.toContain("first question");
  });

  it("overflow: Anthropic's 400 'prompt is too long' is compacted and the call retried once, which succeeds", async () => {
    w.fake.reset();
    const sid = "auto-overflow";
    await createWithSmallKeep(sid);
    w.fake.script(fakeReply("first answer", { usage: { input_tokens: 1_000, output_tokens: 10 } }));
    await w.cmd.send(sid, { type: "prompt", text: "first question" });
    await w.cmd.waitFor(sid, runs(1));
    w.fake.script(
      fakeContextOverflow(213_462),
      fakeReply("## Goal\nEarlier work."),
      fakeReply("answer after recovery", { usage: { input_tokens: 800, output_tokens: 10 } }),
    );
    await w.cmd.send(sid, { type: "prompt", text: "second question" });
    const events = await w.cmd.waitFor(sid, runs(2));
    const run = fromRun(events, 2);
    expect(notation(run)).toEqual([
      "agent_start",
      "turn_start",
      "ms:user",
      "me:user",
      "ms:assistant",
      "me:assistant(error)",
      "compaction_start",
      "compaction",
      "compaction_end",
      "ms:assistant",
      "me:assistant(stop)",
      "turn_end",
      "agent_end",
    ]);
    const overflowed = run.find((e) => e.type === "message_end" && e.message.role === "assistant");
    expect(
      overflowed?.type === "message_end" && overflowed.message.role === "assistant" && overflowed.message.errorMessage,
    ).toBe("400 invalid_request_error: prompt is too long: 213462 tokens > 200000 maximum");
    expect(run.find((e) => e.type === "compaction_start")).toMatchObject({ reason: "overflow" });
    expect(run.find((e) => e.type === "compaction_end")).toMatchObject({ reason: "overflow", willRetry: true });
    const last = run.at(-1);
    expect(last?.type === "agent_end" && last.messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
    // requests of this run: the overflowed call, the summary, the retry on the compacted context
    const [first, summary, retry] = w.fake.requests.slice(1);
    expect(requestText(first)).toContain("first question");
    expect(isSummaryRequest(summary)).toBe(true);
    expect(requestText(retry)).toContain("Earlier work.");
    expect(requestText(retry)).toContain("second question");
    expect(requestText(retry)).not.toContain("first question");
  });

  it("overflow again after the retry: the run ends with the provider's error, after one compaction", async () => {
    w.fake.reset();
    const sid = "auto-overflow-twice";
    await createWithSmallKeep(sid);
    w.fake.script(fakeReply("first answer", { usage: { input_tokens: 1_000, output_tokens: 10 } }));
    await w.cmd.send(sid, { type: "prompt", text: "first question" });
    await w.cmd.waitFor(sid, runs(1));
    w.fake.script(fakeContextOverflow(250_000), fakeReply("## Goal\nEarlier work."), fakeContextOverflow(240_000));
    await w.cmd.send(sid, { type: "prompt", text: "second question" });
    const run = fromRun(await w.cmd.waitFor(sid, runs(2)), 2);
    expect(notation(run).filter((t) => t === "compaction_start")).toHaveLength(1);
    expect(notation(run).slice(-3)).toEqual(["me:assistant(error)", "turn_end", "agent_end"]);
    expect(w.fake.requests).toHaveLength(4);
  });
});
