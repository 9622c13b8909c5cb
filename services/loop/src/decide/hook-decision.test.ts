// Specs of named hook servers' decisions (change 53): given a log, when a server is about to be asked
// or has answered, then it is asked or not, and this `hook_decision` is recorded (or none).
import {
  decodeSessionFold,
  encodeSessionFold,
  foldSessionEvents,
  hookDecisionKey,
  type SessionState,
} from "@fleet/protocol";
import { SESSION_ID, T0, userMessage } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { given, secondRunStarted } from "../testing/decider-spec.js";
import {
  canonicalJson,
  decideHookAnswer,
  HOOK_OUTPUT_INLINE_BYTES,
  hookDecisionBody,
  hookInputHash,
  lookupHookDecision,
} from "./hook-decision.js";
import { stampDraft } from "./stamp-draft.js";

const SECRET = userMessage("my key is sk-ant-abcdefghijklmnop");
const REDACTED = userMessage("my key is [REDACTED]");
const running = secondRunStarted(SECRET);
const input = { messages: [SECRET] };
const hash = hookInputHash("transform_context", input);

/** Appends `body` as the shell does (stamped on the open run) and returns the fold after it. */
function record(state: SessionState, body: ReturnType<typeof hookDecisionBody>): SessionState {
  const event = stampDraft(
    state,
    { id: `h-${state.events}`, body },
    { sessionId: SESSION_ID, producer: "spec", now: T0 },
  );
  return foldSessionEvents([event], state);
}

describe("hook decisions / before asking", () => {
  it("no decision in the log: the server is asked", () => {
    expect(lookupHookDecision(given(...running).state, "transform_context", "redact", hash)).toEqual({ kind: "ask" });
  });

  it("a changed answer is recorded; from then on the same input of that server is answered from the log", () => {
    const outcome = decideHookAnswer(input, { kind: "reply", output: { messages: [REDACTED] } });
    expect(outcome).toMatchObject({ kind: "changed", output: { messages: [REDACTED] }, inline: true });
    if (outcome.kind !== "changed") throw new Error("unreachable");
    const body = hookDecisionBody({
      hook: "transform_context",
      server: "redact",
      inputHash: hash,
      turn: 1,
      output: outcome.output,
    });
    const state = record(given(...running).state, body);
    expect(lookupHookDecision(state, "transform_context", "redact", hash)).toEqual({
      kind: "recorded",
      record: { output: { messages: [REDACTED] } },
    });
    // Another server, another hook or another input is still asked.
    expect(lookupHookDecision(state, "transform_context", "audit", hash)).toEqual({ kind: "ask" });
    expect(lookupHookDecision(state, "convert_to_llm", "redact", hash)).toEqual({ kind: "ask" });
    expect(
      lookupHookDecision(state, "transform_context", "redact", hookInputHash("transform_context", { messages: [] })),
    ).toEqual({
      kind: "ask",
    });
  });

  it("the decision survives a snapshot of the fold, and the next run starts without it", () => {
    const body = hookDecisionBody({
      hook: "transform_context",
      server: "redact",
      inputHash: hash,
      turn: 1,
      output: { messages: [REDACTED] },
    });
    const state = record(given(...running).state, body);
    const decoded = decodeSessionFold(JSON.parse(JSON.stringify(encodeSessionFold(state))));
    if (!decoded.ok) throw new Error(decoded.error);
    expect(decoded.value.hookDecisions.get(hookDecisionKey("transform_context", "redact", hash))).toEqual({
      output: { messages: [REDACTED] },
    });
    const next = given(...running, { type: "agent_end", messages: [] }, { type: "agent_start" }).state;
    expect(next.hookDecisions.size).toBe(0);
  });

  it("the first decision of a key stands (a second one appended by a racing retry is ignored)", () => {
    const first = hookDecisionBody({
      hook: "should_stop_after_turn",
      server: "s",
      inputHash: hash,
      turn: 1,
      output: { stop: true },
    });
    const second = hookDecisionBody({
      hook: "should_stop_after_turn",
      server: "s",
      inputHash: hash,
      turn: 1,
      output: { stop: false },
    });
    const state = record(record(given(...running).state, first), second);
    expect(lookupHookDecision(state, "should_stop_after_turn", "s", hash)).toEqual({
      kind: "recorded",
      record: { output: { stop: true } },
    });
  });
});

describe("hook decisions / after an answer", () => {
  it("an answer that repeats the input, an empty answer and no responders change nothing: nothing is recorded", () => {
    expect(decideHookAnswer(input, { kind: "reply", output: { messages: [SECRET] } })).toEqual({ kind: "unchanged" });
    expect(decideHookAnswer(input, { kind: "reply", output: {} })).toEqual({ kind: "unchanged" });
    expect(decideHookAnswer(input, { kind: "reply", output: undefined })).toEqual({ kind: "unchanged" });
    expect(decideHookAnswer(input, { kind: "none" })).toEqual({ kind: "unchanged" });
  });

  it("a timeout or failure fails closed with its reason", () => {
    const reason = "Remote hook fleet.hook.transform_context.redact timed out after 1000 ms";
    expect(decideHookAnswer(input, { kind: "failed", reason })).toEqual({ kind: "fail", reason });
  });

  it("a large output goes by reference", () => {
    const big = userMessage("x".repeat(HOOK_OUTPUT_INLINE_BYTES));
    const outcome = decideHookAnswer(input, { kind: "reply", output: { messages: [big] } });
    expect(outcome).toMatchObject({ kind: "changed", inline: false });
    const ref = { bucket: "fleet_blobs", name: "hooks/x", size: 70_000 };
    const body = hookDecisionBody({
      hook: "transform_context",
      server: "r",
      inputHash: hash,
      turn: 2,
      output: {},
      outputRef: ref,
    });
    expect(body).toEqual({
      type: "hook_decision",
      hook: "transform_context",
      server: "r",
      inputHash: hash,
      turn: 2,
      outputRef: ref,
    });
    const state = record(given(...running).state, body);
    expect(lookupHookDecision(state, "transform_context", "r", hash)).toEqual({
      kind: "recorded",
      record: { outputRef: ref },
    });
  });

  it("the input hash does not depend on key order", () => {
    expect(hookInputHash("on_payload", { a: 1, b: { c: 2, d: 3 } })).toBe(
      hookInputHash("on_payload", { b: { d: 3, c: 2 }, a: 1 }),
    );
    expect(hookInputHash("on_payload", { a: 1 })).not.toBe(hookInputHash("convert_to_llm", { a: 1 }));
    expect(canonicalJson({ b: [{ z: 1, y: 2 }], a: null })).toBe('{"a":null,"b":[{"y":2,"z":1}]}');
  });
});
