// Automatic compaction inside a run (pi coding-agent 0.73.1's threshold and overflow compaction).
import {
  type AssistantMessage,
  COMPACTION_SUMMARY_PREFIX,
  type ContextMessage,
  convertToLlm,
  getBranch,
  runCursorOf,
  type Usage,
} from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { historySummaryRequest, SUMMARIZATION_SYSTEM_PROMPT } from "../compaction-prompts.js";
import { AUTO_COMPACTION_TEXT } from "./auto-compaction.js";
import { resumePointFromCursor } from "./resume-point.js";
import { deferred, T0, type TestEngine, testEngine, trace, user } from "./testing/harness.js";
import type { EngineEvent } from "./types.js";

const usageOf = (tokens: number): Usage => ({
  input: tokens,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: tokens,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});
const assistant = (text: string, tokens: number): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "text", text }],
  api: "scripted",
  provider: "scripted",
  model: "scripted-1",
  usage: usageOf(tokens),
  stopReason: "stop",
  timestamp: T0,
});

/** A window of 10 000 tokens, 2 000 reserved: the threshold is 8 000. */
const WINDOW = 10_000;
const SETTINGS = { enabled: true, reserveTokens: 2_000, keepRecentTokens: 500 };
/** user1 (1 000 tokens), assistant1, user2 (1 000 tokens), assistant2 reporting a context of 9 000. */
const HISTORY: ContextMessage[] = [
  user("a".repeat(4_000)),
  assistant("b".repeat(400), 1_200),
  user("c".repeat(4_000)),
  assistant("ok", 9_000),
];
const OVERFLOW = "400 invalid_request_error: prompt is too long: 250000 tokens > 200000 maximum";

type Steps = Parameters<typeof testEngine>[0]["steps"];

function engineWith(steps: Steps, history = HISTORY, settings = SETTINGS): TestEngine {
  return testEngine({
    steps,
    init: { messages: history },
    config: { compaction: settings },
    contextWindow: WINDOW,
    // pi coding-agent's conversion (the service's): the compaction summary becomes user text
    hooks: { convertToLlm },
  });
}

const bodyOf = (events: readonly EngineEvent[], type: string) => events.find((e) => e.body.type === type)?.body;
const textOf = (m: { content: unknown } | undefined) =>
  (m?.content as { type: string; text?: string }[] | undefined)?.map((b) => b.text ?? "").join("");

describe("automatic compaction / threshold", () => {
  it("past contextWindow - reserveTokens, the run compacts before its LLM call, with pi's request, and goes on", async () => {
    const { engine, rec, provider } = engineWith([{ text: "SUMMARY" }, { text: "answer" }]);
    const result = await engine.prompt("next");
    expect(result.status).toBe("completed");
    expect(trace(rec.events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user(next)",
      "message_end:user(next)",
      "compaction_start",
      "compaction",
      "compaction_end",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(2)",
    ]);
    expect(bodyOf(rec.events, "compaction_start")).toEqual({ type: "compaction_start", reason: "threshold" });
    expect(bodyOf(rec.events, "compaction_end")).toEqual({
      type: "compaction_end",
      reason: "threshold",
      aborted: false,
      willRetry: false,
    });
    // kept: user2 onwards (the cut keeps ≥ 500 tokens); the summary covers user1 and assistant1
    expect(bodyOf(rec.events, "compaction")).toMatchObject({ summary: "SUMMARY", firstKeptEntryId: "init-3" });
    const summaryRequest = provider.requests[0];
    expect(summaryRequest?.context.systemPrompt).toBe(SUMMARIZATION_SYSTEM_PROMPT);
    expect(summaryRequest?.options.maxTokens).toBe(Math.floor(0.8 * SETTINGS.reserveTokens));
    const expected = historySummaryRequest(HISTORY.slice(0, 2), SETTINGS.reserveTokens, undefined, undefined);
    expect(textOf(summaryRequest?.context.messages[0])).toBe(expected.text);
    // the real call sees the summary, then the kept messages and the prompt
    const call = provider.requests[1]?.context.messages ?? [];
    expect(textOf(call[0])?.startsWith(COMPACTION_SUMMARY_PREFIX)).toBe(true);
    expect(call.slice(1).map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(textOf(call.at(-1))).toBe("next");
  });

  it("under the threshold, disabled, or with no fresh usage after the last compaction: no compaction", async () => {
    const under = engineWith([{ text: "answer" }], [...HISTORY.slice(0, 3), assistant("ok", 7_000)]);
    await under.engine.prompt("next");
    expect(trace(under.rec.events)).not.toContain("compaction_start");

    const disabled = engineWith([{ text: "answer" }], HISTORY, { ...SETTINGS, enabled: false });
    await disabled.engine.prompt("next");
    expect(trace(disabled.rec.events)).not.toContain("compaction_start");

    // one compaction, then a second prompt: the kept assistant's stale usage does not trigger another
    const again = engineWith([{ text: "SUMMARY" }, { text: "answer", usage: usageOf(3_000) }, { text: "more" }]);
    await again.engine.prompt("next");
    await again.engine.prompt("and more");
    expect(trace(again.rec.events).filter((t) => t === "compaction_start")).toHaveLength(1);
  });

  it("between turns of one run: after a tool turn that passed the threshold", async () => {
    const { engine, rec, provider } = testEngine({
      steps: [
        {
          content: [{ type: "toolCall", id: "t1", name: "echo", arguments: { text: "x" } }],
          usage: usageOf(9_500),
        },
        { text: "SUMMARY" },
        { text: "done" },
      ],
      tools: [
        {
          name: "echo",
          description: "echo",
          parameters: { type: "object", properties: { text: { type: "string" } } },
        },
      ],
      handlers: { echo: async () => ({ content: [{ type: "text", text: "x" }] }) },
      init: { messages: HISTORY.slice(0, 2) },
      config: { compaction: SETTINGS },
      contextWindow: WINDOW,
    });
    await engine.prompt("c".repeat(4_000));
    expect(trace(rec.events)).toEqual([
      "agent_start",
      "turn_start",
      `message_start:user(${"c".repeat(4_000)})`,
      `message_end:user(${"c".repeat(4_000)})`,
      "message_start:assistant(…)",
      "message_end:assistant(toolUse)",
      "tool_execution_start:t1",
      "tool_execution_end:t1",
      "message_start:toolResult(t1)",
      "message_end:toolResult(t1)",
      "turn_end[t1]",
      "turn_start",
      "compaction_start",
      "compaction",
      "compaction_end",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(4)",
    ]);
    expect(provider.requests[1]?.context.systemPrompt).toBe(SUMMARIZATION_SYSTEM_PROMPT);
  });

  it("a failed summary ends the compaction with pi's error text and the call goes ahead uncompacted", async () => {
    const { engine, rec, provider } = engineWith([{ error: "overloaded_error: Overloaded" }, { text: "answer" }]);
    await engine.prompt("next");
    expect(bodyOf(rec.events, "compaction_end")).toEqual({
      type: "compaction_end",
      reason: "threshold",
      aborted: false,
      willRetry: false,
      errorMessage: AUTO_COMPACTION_TEXT.thresholdFailed("Summarization failed: overloaded_error: Overloaded"),
    });
    expect(trace(rec.events)).not.toContain("compaction");
    expect(provider.requests[1]?.context.messages).toHaveLength(5);
  });
});

describe("automatic compaction / abort", () => {
  it("an abort during a threshold compaction ends it aborted, then the run ends aborted with no LLM call", async () => {
    const summaryAsked = deferred();
    const release = deferred();
    const { engine, rec, provider } = engineWith([
      async () => {
        summaryAsked.resolve();
        await release.promise;
        return { text: "SUMMARY" };
      },
      { text: "never" },
    ]);
    const running = engine.prompt("next");
    await summaryAsked.promise;
    engine.abort();
    release.resolve();
    await running;
    expect(trace(rec.events).slice(4)).toEqual([
      "compaction_start",
      "compaction_end",
      "message_start:assistant(…)",
      "message_end:assistant(aborted)",
      "turn_end[]",
      "agent_end(2)",
    ]);
    expect(bodyOf(rec.events, "compaction_end")).toMatchObject({ reason: "threshold", aborted: true });
    expect(provider.requests).toHaveLength(1);
  });
});

describe("automatic compaction / overflow", () => {
  const small = [user("a".repeat(4_000)), assistant("b".repeat(400), 1_200), user("c".repeat(4_000))];

  it("a context-overflow error: compaction (willRetry), then the call is retried once in the same turn", async () => {
    const { engine, rec, provider } = engineWith(
      [{ error: OVERFLOW }, { text: "SUMMARY" }, { text: "answer" }],
      [...small, assistant("ok", 1_000)],
    );
    const result = await engine.prompt("next");
    expect(trace(rec.events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user(next)",
      "message_end:user(next)",
      "message_start:assistant(…)",
      "message_end:assistant(error)",
      "compaction_start",
      "compaction",
      "compaction_end",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(3)",
    ]);
    expect(bodyOf(rec.events, "compaction_start")).toEqual({ type: "compaction_start", reason: "overflow" });
    expect(bodyOf(rec.events, "compaction_end")).toMatchObject({ reason: "overflow", willRetry: true });
    expect(result.status === "completed" && result.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "assistant",
    ]);
    // the retried call: the summary first, and not the overflowed error message
    const retry = provider.requests[2]?.context.messages ?? [];
    expect(textOf(retry[0])?.startsWith(COMPACTION_SUMMARY_PREFIX)).toBe(true);
    expect(retry.some((m) => m.role === "assistant" && m.stopReason === "error")).toBe(false);
  });

  it("a second overflow ends the run with the error; one compaction only", async () => {
    const { engine, rec } = engineWith(
      [{ error: OVERFLOW }, { text: "SUMMARY" }, { error: OVERFLOW }],
      [...small, assistant("ok", 1_000)],
    );
    await engine.prompt("next");
    const t = trace(rec.events);
    expect(t.filter((x) => x === "compaction_start")).toHaveLength(1);
    expect(t.slice(-3)).toEqual(["message_end:assistant(error)", "turn_end[]", "agent_end(3)"]);
  });

  it("not an overflow (a rate limit), or compaction disabled: the error ends the run as before", async () => {
    const limited = engineWith(
      [{ error: "429 rate_limit_error: rate limit: too many tokens per minute" }],
      [...small, assistant("ok", 1_000)],
    );
    await limited.engine.prompt("next");
    expect(trace(limited.rec.events)).not.toContain("compaction_start");

    const disabled = engineWith([{ error: OVERFLOW }], [...small, assistant("ok", 1_000)], {
      ...SETTINGS,
      enabled: false,
    });
    await disabled.engine.prompt("next");
    expect(trace(disabled.rec.events).slice(-2)).toEqual(["turn_end[]", "agent_end(2)"]);
  });
});

describe("automatic compaction / a run resumed in the middle of one", () => {
  /** Runs until the event `cutAt` fails to append (the worker died), then resumes on a new engine. */
  async function cutAndResume(
    steps: Steps,
    cutAt: string,
    resumeSteps: Steps,
    history: ContextMessage[] = [...HISTORY.slice(0, 3), assistant("ok", 1_000)],
  ) {
    let cut = false;
    const first = testEngine({
      steps,
      init: { messages: history },
      config: { compaction: SETTINGS },
      contextWindow: WINDOW,
      wrapEmit: (emit) => (event) => {
        if (cut || event.body.type === cutAt) {
          cut = true;
          throw new Error("worker died");
        }
        return emit(event);
      },
    });
    const failed = await first.engine.prompt("next");
    expect(failed.status).toBe("emit_failed");
    const point = resumePointFromCursor(runCursorOf(first.session), "owner changed");
    if (!point) throw new Error("nothing to resume");
    const second = testEngine({ steps: resumeSteps, session: first.session, contextWindow: WINDOW });
    const result = await second.engine.resume(point);
    return { first, second, result };
  }

  it("cut before the overflow compaction's entry: the new owner redoes it and retries the call", async () => {
    const { first, second } = await cutAndResume([{ error: OVERFLOW }, { text: "SUMMARY" }], "compaction", [
      { text: "SUMMARY 2" },
      { text: "answer" },
    ]);
    expect(trace(first.rec.events).slice(-2)).toEqual(["message_end:assistant(error)", "compaction_start"]);
    expect(trace(second.rec.events)).toEqual([
      "run_resumed(owner changed)",
      "compaction",
      "compaction_end",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(3)",
    ]);
    expect(bodyOf(second.rec.events, "compaction")).toMatchObject({ summary: "SUMMARY 2" });
    expect(bodyOf(second.rec.events, "compaction_end")).toMatchObject({ reason: "overflow", willRetry: true });
    expect(second.session.compaction).toBeNull();
  });

  it("cut after the entry: only compaction_end is missing; the summary is not made again", async () => {
    const { second } = await cutAndResume([{ error: OVERFLOW }, { text: "SUMMARY" }], "compaction_end", [
      { text: "answer" },
    ]);
    expect(trace(second.rec.events)).toEqual([
      "run_resumed(owner changed)",
      "compaction_end",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(3)",
    ]);
    expect(second.provider.requests).toHaveLength(1);
    const branch = getBranch(second.session.tree, second.session.tree.leafId);
    expect(branch.ok && branch.entries.filter((e) => e.type === "compaction")).toHaveLength(1);
  });

  it("cut during a threshold compaction: the new owner redoes it, then makes the LLM call", async () => {
    const { first, second } = await cutAndResume(
      [{ text: "SUMMARY" }],
      "compaction",
      [{ text: "S2" }, { text: "a" }],
      HISTORY,
    );
    expect(trace(first.rec.events).slice(-1)).toEqual(["compaction_start"]);
    expect(trace(second.rec.events)).toEqual([
      "run_resumed(owner changed)",
      "compaction",
      "compaction_end",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(2)",
    ]);
    expect(bodyOf(second.rec.events, "compaction_end")).toMatchObject({ reason: "threshold", willRetry: false });
    expect(second.provider.requests[0]?.context.systemPrompt).toBe(SUMMARIZATION_SYSTEM_PROMPT);
  });

  it("cut between the overflowed message and its compaction: the new owner compacts and retries", async () => {
    const { second } = await cutAndResume([{ error: OVERFLOW }], "compaction_start", [
      { text: "SUMMARY" },
      { text: "answer" },
    ]);
    expect(trace(second.rec.events)).toEqual([
      "run_resumed(owner changed)",
      "compaction_start",
      "compaction",
      "compaction_end",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(3)",
    ]);
  });
});
