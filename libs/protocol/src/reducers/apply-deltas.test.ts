import { describe, expect, it } from "vitest";
import { assistantMessage, deltasOf, startOf, textOf, toolCall } from "../../fixtures/builders.js";
import type { StreamDelta } from "../assistant-stream.js";
import type { AssistantMessage } from "../messages.js";
import { applyDelta, applyDeltas, expandMessageUpdate } from "./apply-deltas.js";

const final = assistantMessage([
  { type: "thinking", thinking: "plan it", thinkingSignature: "sig" },
  textOf("Reading."),
  toolCall("toolu_1", "read", { path: "a.txt", limit: 5 }),
]);
const start = startOf(final);

describe("applyDeltas", () => {
  it("rebuilds the final content from message_start and every delta; other fields stay the start's", () => {
    // stopReason and usage arrive with message_end only.
    expect(applyDeltas(start, deltasOf(final))).toEqual({ ...start, content: final.content });
  });

  it("gives the same message whether deltas arrive in one update or many", () => {
    const deltas = deltasOf(final);
    let chunked = start;
    for (let i = 0; i < deltas.length; i += 2) chunked = applyDeltas(chunked, deltas.slice(i, i + 2));
    expect(chunked).toEqual(applyDeltas(start, deltas));
  });

  it("accumulates tool call JSON in partialJson and parses arguments progressively", () => {
    const deltas: StreamDelta[] = [
      { type: "toolcall_start", contentIndex: 0, id: "toolu_1", name: "edit" },
      { type: "toolcall_delta", contentIndex: 0, delta: '{"path":"src/a' },
    ];
    expect(applyDeltas(start, deltas).content).toEqual([
      { type: "toolCall", id: "toolu_1", name: "edit", arguments: { path: "src/a" }, partialJson: '{"path":"src/a' },
    ]);
    const more = applyDeltas(start, [...deltas, { type: "toolcall_delta", contentIndex: 0, delta: '.ts","edits":[' }]);
    expect(more.content[0]).toEqual({
      type: "toolCall",
      id: "toolu_1",
      name: "edit",
      arguments: { path: "src/a.ts", edits: [] },
      partialJson: '{"path":"src/a.ts","edits":[',
    });
  });

  it("toolcall_end replaces the streaming block with the final tool call (no partialJson)", () => {
    const call = toolCall("toolu_1", "edit", { path: "x" });
    const message = applyDeltas(start, [
      { type: "toolcall_start", contentIndex: 0, id: "toolu_1", name: "edit" },
      { type: "toolcall_delta", contentIndex: 0, delta: '{"pa' },
      { type: "toolcall_end", contentIndex: 0, toolCall: call },
    ]);
    expect(message.content).toEqual([call]);
  });

  it("text_end and thinking_end set the final text and signature", () => {
    const message = applyDeltas(start, [
      { type: "thinking_start", contentIndex: 0 },
      { type: "thinking_delta", contentIndex: 0, delta: "draft" },
      { type: "thinking_end", contentIndex: 0, content: "final thought", thinkingSignature: "s1" },
      { type: "text_start", contentIndex: 1 },
      { type: "text_delta", contentIndex: 1, delta: "Hel" },
      { type: "text_end", contentIndex: 1, content: "Hello" },
    ]);
    expect(message.content).toEqual([
      { type: "thinking", thinking: "final thought", thinkingSignature: "s1" },
      { type: "text", text: "Hello" },
    ]);
  });

  it("keeps a partial text block when the stream stops before text_end (abort)", () => {
    const message = applyDeltas(start, [
      { type: "text_start", contentIndex: 0 },
      { type: "text_delta", contentIndex: 0, delta: "Once upon" },
    ]);
    expect(message.content).toEqual([{ type: "text", text: "Once upon" }]);
  });

  it("ignores deltas that do not fit: index past the end, block of another type", () => {
    const withText = applyDeltas(start, [{ type: "text_start", contentIndex: 0 }]);
    expect(applyDelta(withText, { type: "text_delta", contentIndex: 5, delta: "x" })).toBe(withText);
    expect(applyDelta(withText, { type: "text_start", contentIndex: 2 })).toBe(withText);
    expect(applyDelta(withText, { type: "thinking_delta", contentIndex: 0, delta: "x" })).toBe(withText);
    expect(applyDelta(withText, { type: "toolcall_delta", contentIndex: 0, delta: "{" })).toBe(withText);
    expect(applyDelta(withText, { type: "text_delta", contentIndex: 1, delta: "x" })).toBe(withText);
  });

  it("never modifies its input", () => {
    const before = JSON.stringify(start);
    const frozen = Object.freeze({ ...start, content: Object.freeze([]) as unknown as AssistantMessage["content"] });
    applyDeltas(frozen, deltasOf(final));
    expect(JSON.stringify(start)).toBe(before);
  });
});

describe("expandMessageUpdate", () => {
  it("gives pi's {message, assistantMessageEvent} per delta, each with its own partial snapshot", () => {
    const deltas: StreamDelta[] = [
      { type: "text_start", contentIndex: 0 },
      { type: "text_delta", contentIndex: 0, delta: "Hi" },
      { type: "text_delta", contentIndex: 0, delta: " there" },
    ];
    const updates = expandMessageUpdate(start, deltas);
    expect(updates.map((u) => u.message.content)).toEqual([
      [{ type: "text", text: "" }],
      [{ type: "text", text: "Hi" }],
      [{ type: "text", text: "Hi there" }],
    ]);
    expect(updates.map((u) => u.assistantMessageEvent.type)).toEqual(["text_start", "text_delta", "text_delta"]);
    expect(updates[1]?.assistantMessageEvent).toEqual({
      type: "text_delta",
      contentIndex: 0,
      delta: "Hi",
      partial: updates[1]?.message,
    });
    for (const u of updates) expect(u.assistantMessageEvent.partial).toBe(u.message);
  });

  it("chains across updates: the next expansion starts from the previous last message", () => {
    const deltas = deltasOf(final);
    const first = expandMessageUpdate(start, deltas.slice(0, 4));
    const second = expandMessageUpdate(first.at(-1)?.message ?? start, deltas.slice(4));
    expect(second.at(-1)?.message.content).toEqual(final.content);
    expect(first).toHaveLength(4);
    expect(second).toHaveLength(deltas.length - 4);
  });

  it("gives no events for no deltas", () => {
    expect(expandMessageUpdate(start, [])).toEqual([]);
  });
});
