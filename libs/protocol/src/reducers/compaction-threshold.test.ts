import { describe, expect, it } from "vitest";
import { assistantMessage, createLogBuilder, textOf, toolResultMessage, userMessage } from "../../fixtures/builders.js";
import { DEFAULT_COMPACTION_SETTINGS } from "../config.js";
import type { AssistantMessage } from "../messages.js";
import { contextTokensAfterCompaction, thresholdCompaction } from "./compaction-threshold.js";
import { findRunCursor } from "./run-cursor.js";
import { foldSessionTreeEvents, getBranch } from "./session-tree.js";

function pathOf(build: (log: ReturnType<typeof createLogBuilder>) => void) {
  const log = createLogBuilder(60);
  build(log);
  const tree = foldSessionTreeEvents(log.events);
  const branch = getBranch(tree, tree.leafId);
  if (!branch.ok) throw new Error(branch.error);
  return { path: branch.entries, events: log.events };
}

describe("compaction threshold (pi's _checkCompaction, case 2)", () => {
  it("the last fresh usage plus chars/4 of what follows it; error and aborted messages are skipped", () => {
    const { path } = pathOf((log) => {
      log.add({ type: "message_end", message: userMessage("q") });
      log.add({ type: "message_end", message: assistantMessage([textOf("a")], { tokens: 1_000 }) });
      log.add({ type: "message_end", message: toolResultMessage("t1", "read", "x".repeat(400)) });
      log.add({
        type: "message_end",
        message: assistantMessage([], { stopReason: "error", errorMessage: "boom", tokens: 99_999 }),
      });
      log.add({ type: "message_end", message: userMessage("y".repeat(40)) });
    });
    // 1 000 + 100 (tool result) + 0 (empty error message) + 10 (user)
    expect(contextTokensAfterCompaction(path)).toBe(1_110);
  });

  it("compacts above contextWindow - reserveTokens only when enabled", () => {
    const { path } = pathOf((log) => {
      log.add({ type: "message_end", message: userMessage("q") });
      log.add({ type: "message_end", message: assistantMessage([textOf("a")], { tokens: 183_617 }) });
    });
    const settings = DEFAULT_COMPACTION_SETTINGS;
    expect(thresholdCompaction(path, settings, 200_000)).toEqual({ compact: true, tokens: 183_617, limit: 183_616 });
    expect(thresholdCompaction(path, settings, 200_001).compact).toBe(false);
    expect(thresholdCompaction(path, { ...settings, enabled: false }, 200_000).compact).toBe(false);
  });

  it("no check when the last fresh usage comes before the latest compaction (kept messages)", () => {
    const { path } = pathOf((log) => {
      const kept = log.nextId();
      log.add({ type: "message_end", message: userMessage("q") });
      log.add({ type: "message_end", message: assistantMessage([textOf("a")], { tokens: 500_000 }) });
      log.add({ type: "compaction", summary: "s", firstKeptEntryId: kept, tokensBefore: 500_000 });
      log.add({ type: "message_end", message: userMessage("next") });
    });
    expect(contextTokensAfterCompaction(path)).toBeUndefined();
    expect(thresholdCompaction(path, DEFAULT_COMPACTION_SETTINGS, 200_000).compact).toBe(false);
  });
});

describe("run cursor / an overflowed call retried after its compaction", () => {
  it("compaction_end {willRetry} turns the overflowed turn back into awaiting_llm (overflowRetry)", () => {
    const log = createLogBuilder(61);
    log.add({ type: "agent_start" });
    log.add({ type: "turn_start" });
    log.add({ type: "message_end", message: userMessage("q") });
    const overflowed: AssistantMessage = assistantMessage([], {
      stopReason: "error",
      errorMessage: "prompt is too long",
    });
    log.add({ type: "message_start", message: overflowed });
    log.add({ type: "message_end", message: overflowed });
    expect(findRunCursor(log.events).kind).toBe("awaiting_turn_end");
    log.add({ type: "compaction_start", reason: "overflow" });
    expect(findRunCursor(log.events).kind).toBe("awaiting_turn_end");
    log.add({ type: "compaction_end", reason: "overflow", aborted: false, willRetry: true });
    const cursor = findRunCursor(log.events);
    expect(cursor).toMatchObject({ kind: "awaiting_llm", openMessage: null, overflowRetry: true, turns: 1 });
    expect(cursor.kind !== "idle" && cursor.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    // a failed recovery leaves the turn to end with the error
    const failed = createLogBuilder(62);
    for (const e of log.events.slice(0, 6)) failed.add(e as never);
    failed.add({ type: "compaction_end", reason: "overflow", aborted: false, willRetry: false, errorMessage: "x" });
    expect(findRunCursor(failed.events).kind).toBe("awaiting_turn_end");
  });
});
