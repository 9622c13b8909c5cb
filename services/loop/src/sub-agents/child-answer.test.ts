// Given a child's log, the answer its parent's call gets: the first run after the parent's prompt,
// with that run's spend, or the prompt's refusal (change 71).
import { childCommandIds, type FleetEvent } from "@fleet/protocol";
import { assistantMessage, CONFIG, createLogBuilder, emitMessage, textOf, userMessage } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { childAnswerFold, childAnswerRecord, foldChildAnswer } from "./child-answer.js";

const CHILD = "child-of-p";
const ids = childCommandIds(CHILD);

function answerOf(events: readonly FleetEvent[]) {
  const fold = childAnswerFold(CHILD);
  for (const event of events) foldChildAnswer(fold, event);
  return fold.answer;
}

/** A child created, its prompt accepted, and a run per reply (each reply spends `tokens` input tokens). */
function childLog(replies: { text: string; tokens: number; stopReason?: "stop" | "error" }[]) {
  const log = createLogBuilder(7, CHILD);
  log.add({ type: "session_created", config: CONFIG });
  log.add({ type: "command_accepted", commandId: ids.create, commandType: "create_session" });
  log.add({ type: "command_accepted", commandId: ids.prompt, commandType: "prompt" });
  for (const reply of replies) {
    log.add({ type: "agent_start" });
    log.add({ type: "turn_start" });
    emitMessage(log, userMessage("task"));
    const message = assistantMessage([textOf(reply.text)], {
      tokens: reply.tokens,
      ...(reply.stopReason === "error" ? { stopReason: "error", errorMessage: "overloaded" } : {}),
    });
    log.add({ type: "message_start", message });
    log.add({ type: "message_end", message });
    log.add({ type: "turn_end", message, toolResults: [] });
    log.add({ type: "agent_end", messages: [message] });
  }
  return log.events;
}

describe("foldChildAnswer", () => {
  it("answers with the first run after the prompt's acceptance, and that run's spend", () => {
    const events = childLog([
      { text: "first answer", tokens: 120 },
      { text: "later run", tokens: 9 },
    ]);
    const answer = answerOf(events);
    const end = events.find((e) => e.type === "agent_end");
    expect(answer?.msgId).toBe(`${CHILD}.result.${end?.meta.runId}.log`);
    expect(answer?.record.content).toEqual([{ type: "text", text: "first answer" }]);
    expect(answer?.record.isError).toBe(false);
    expect(answer?.record.details).toMatchObject({
      childSessionId: CHILD,
      spend: { inputTokens: 120, totalTokens: 120 },
    });
  });

  it("gives the record the child's owner stores: an error naming why a run ended without an answer", () => {
    const events = childLog([{ text: "", tokens: 5, stopReason: "error" }]);
    const end = events.find((e) => e.type === "agent_end");
    if (end?.type !== "agent_end") throw new Error("no agent_end");
    const answer = answerOf(events);
    const spent = { inputTokens: 5, outputTokens: 0, totalTokens: 5, costUsd: 0 };
    expect(answer?.record).toEqual(childAnswerRecord(CHILD, end.messages, spent));
    expect(answer?.record.isError).toBe(true);
    expect(answer?.record.content).toEqual([
      { type: "text", text: `Sub-agent ${CHILD} ended without an answer (overloaded)` },
    ]);
  });

  it("has no answer while the run is open, nor for a run before the prompt was accepted", () => {
    const open = childLog([{ text: "x", tokens: 1 }]).filter((e) => e.type !== "agent_end");
    expect(answerOf(open)).toBeUndefined();
    const log = createLogBuilder(8, CHILD);
    log.add({ type: "session_created", config: CONFIG });
    log.add({ type: "agent_start" });
    log.add({ type: "agent_end", messages: [] });
    expect(answerOf(log.events)).toBeUndefined();
  });

  it("answers with the refusal when the child rejected its parent's prompt", () => {
    const log = createLogBuilder(9, CHILD);
    log.add({ type: "session_created", config: CONFIG });
    log.add({
      type: "command_rejected",
      commandId: ids.prompt,
      commandType: "prompt",
      code: "budget_exceeded",
      reason: "run budget spent",
    });
    const answer = answerOf(log.events);
    expect(answer?.msgId).toBe(`${CHILD}.refused`);
    expect(answer?.record.isError).toBe(true);
    expect(answer?.record.content).toEqual([
      { type: "text", text: `Sub-agent ${CHILD} refused the task (budget_exceeded: run budget spent)` },
    ]);
  });
});
