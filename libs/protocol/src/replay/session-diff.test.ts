// Two sessions turn by turn (change 51): what counts as a difference, and what does not (latency).
import { describe, expect, it } from "vitest";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  emitMessage,
  textOf,
  toolCall,
  toolResultMessage,
  userMessage,
} from "../../fixtures/builders.js";
import type { FleetEvent } from "../events.js";
import { diffSessionTurns, sessionTurns } from "./session-diff.js";

/** A session: "look up a" → lookup call → `result` → "found"; then "bye" → "ok". `pad` adds idle events. */
function sessionLog(seed: number, opts: { result?: string; model?: string; pad?: number; second?: boolean } = {}) {
  const b = createLogBuilder(seed);
  const model = opts.model ?? "claude-sonnet-4-5";
  const reply = (content: Parameters<typeof assistantMessage>[0]) => ({
    ...assistantMessage(content, { tokens: 10 }),
    model,
  });
  b.add({ type: "session_created", config: CONFIG });
  emitMessage(b, userMessage("look up a"));
  for (let i = 0; i < (opts.pad ?? 0); i++) b.add({ type: "turn_start" });
  b.add({ type: "message_end", message: reply([toolCall("t1", "lookup", { key: "a", n: 1 })]) });
  emitMessage(b, toolResultMessage("t1", "lookup", opts.result ?? "A"));
  b.add({ type: "message_end", message: reply([textOf("found")]) });
  if (opts.second !== false) {
    emitMessage(b, userMessage("bye"));
    b.add({ type: "message_end", message: reply([textOf("ok")]) });
  }
  return b.events as FleetEvent[];
}

describe("session diff", () => {
  it("reads turns: user text, assistant text, model, tool calls with results, tokens, cost, latency", () => {
    const turns = sessionTurns(sessionLog(1, { pad: 3 }));
    expect(turns).toHaveLength(2);
    expect(turns[0]).toMatchObject({
      user: "look up a",
      assistant: "found",
      model: "anthropic/claude-sonnet-4-5",
      toolCalls: [{ name: "lookup", args: '{"key":"a","n":1}', result: "A", isError: false }],
      inputTokens: 20,
      outputTokens: 0,
    });
    expect(turns[0]?.latencyMs).toBeGreaterThan(turns[1]?.latencyMs ?? 0);
  });

  it("finds nothing when only the latency differs", () => {
    const diff = diffSessionTurns(sessionTurns(sessionLog(1)), sessionTurns(sessionLog(2, { pad: 5 })));
    expect(diff.differences).toEqual([]);
    expect(diff.divergedToolCalls).toBe(0);
  });

  it("names each field that differs, per turn, and counts the diverged tool calls", () => {
    const diff = diffSessionTurns(
      sessionTurns(sessionLog(1)),
      sessionTurns(sessionLog(2, { result: "B", model: "claude-haiku-4-5" })),
    );
    expect(diff.differences.map((d) => `${d.turn}:${d.field}`)).toEqual(["0:model", "0:tool_calls", "1:model"]);
    expect(diff.differences[1]).toMatchObject({ a: 'lookup({"key":"a","n":1}): A', b: 'lookup({"key":"a","n":1}): B' });
    expect(diff.divergedToolCalls).toBe(1);
  });

  it("reports a turn only one session has", () => {
    const diff = diffSessionTurns(sessionTurns(sessionLog(1)), sessionTurns(sessionLog(2, { second: false })));
    expect(diff.differences).toEqual([{ turn: 1, field: "turn", a: "present", b: "missing" }]);
  });
});
