// The scripted provider: script parsing, streamed events, rates, aborts, request functions.
import type { AssistantStreamEvent } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { parseScript } from "./script.js";
import {
  createScriptedProvider,
  NO_MORE_STEPS,
  type ScriptStep,
  scriptedProviderFromScript,
} from "./scripted-provider.js";
import { flush, manualSleep, T0 } from "./testing/harness.js";
import type { LlmContext, StreamOptions } from "./types.js";

const context: LlmContext = {
  systemPrompt: "",
  messages: [{ role: "user", content: "hello there", timestamp: 1 }],
  tools: [],
};
const options: StreamOptions = { model: { provider: "scripted", modelId: "m-1" }, thinkingLevel: "off" };

async function collect(iterable: AsyncIterable<AssistantStreamEvent>): Promise<AssistantStreamEvent[]> {
  const out: AssistantStreamEvent[] = [];
  for await (const event of iterable) out.push(event);
  return out;
}
const provider = (steps: ScriptStep[], extra: Partial<Parameters<typeof createScriptedProvider>[0]> = {}) =>
  createScriptedProvider({ steps, now: () => T0, ...extra });

describe("parseScript", () => {
  it("reads a JSON object with options and turns", () => {
    const parsed = parseScript(JSON.stringify({ model: "x", tokensPerSecond: 20, turns: [{ text: "hi" }] }));
    expect(parsed).toEqual({
      ok: true,
      value: { api: "scripted", model: "x", tokensPerSecond: 20, turns: [{ content: [], text: "hi" }] },
    });
  });

  it("reads a JSON array of turns", () => {
    const parsed = parseScript('[{"text":"a"},{"error":"boom"}]');
    expect(parsed.ok && parsed.value.turns).toEqual([
      { content: [], text: "a" },
      { content: [], error: "boom" },
    ]);
  });

  it("reads JSONL: one turn per line, an options line, blank lines skipped", () => {
    const parsed = parseScript(
      [
        '{"options":{"chunkChars":3}}',
        '{"content":[{"type":"toolCall","id":"t1","name":"echo","arguments":{"text":"x"}}]}',
        "",
        '{"text":"done","stopReason":"length"}',
      ].join("\n"),
    );
    expect(parsed.ok && parsed.value).toEqual({
      api: "scripted",
      chunkChars: 3,
      turns: [
        { content: [{ type: "toolCall", id: "t1", name: "echo", arguments: { text: "x" } }] },
        { content: [], text: "done", stopReason: "length" },
      ],
    });
  });

  it("names the bad line or field", () => {
    expect(parseScript('{"text":"a"}\n{oops')).toMatchObject({
      ok: false,
      error: expect.stringContaining("line 2: not JSON"),
    });
    expect(parseScript('[{"stopReason":"maybe"}]')).toMatchObject({
      ok: false,
      error: expect.stringContaining("turns.0.stopReason"),
    });
  });
});

describe("scripted provider", () => {
  it("streams faux-style events: start, block start/delta/end, done, with api, provider, model, usage", async () => {
    const p = provider([
      {
        content: [
          { type: "thinking", thinking: "think" },
          { type: "toolCall", id: "t1", name: "echo", arguments: { text: "x" } },
        ],
        text: "hi",
      },
    ]);
    const events = await collect(p.streamFn(context, options, undefined));
    expect(events.map((e) => e.type)).toEqual([
      "start",
      "thinking_start",
      "thinking_delta",
      "thinking_end",
      "toolcall_start",
      "toolcall_delta",
      "toolcall_end",
      "text_start",
      "text_delta",
      "text_end",
      "done",
    ]);
    expect(events[4]).toEqual({ type: "toolcall_start", contentIndex: 1, id: "t1", name: "echo" });
    expect(events[5]).toEqual({ type: "toolcall_delta", contentIndex: 1, delta: '{"text":"x"}' });
    expect(events.at(-1)).toEqual({
      type: "done",
      reason: "toolUse",
      message: {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "think" },
          { type: "toolCall", id: "t1", name: "echo", arguments: { text: "x" } },
          { type: "text", text: "hi" },
        ],
        api: "scripted",
        provider: "scripted",
        model: "m-1",
        usage: {
          input: 3,
          output: 5,
          cacheRead: 0,
          cacheWrite: 0,
          totalTokens: 8,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
        },
        stopReason: "toolUse",
        timestamp: T0,
      },
    });
    expect(p.requests).toEqual([{ context, options, callIndex: 0 }]);
  });

  it("chunkChars splits deltas; error turns stream their content, then end with error", async () => {
    const p = provider([{ text: "abcdefg", error: "overloaded" }], { chunkChars: 3 });
    const events = await collect(p.streamFn(context, options, undefined));
    expect(events.filter((e) => e.type === "text_delta").map((e) => (e.type === "text_delta" ? e.delta : ""))).toEqual([
      "abc",
      "def",
      "g",
    ]);
    expect(events.at(-1)).toMatchObject({
      type: "error",
      reason: "error",
      error: { stopReason: "error", errorMessage: "overloaded", content: [{ type: "text", text: "abcdefg" }] },
    });
  });

  it("a rate sleeps before every delta; an abort ends the stream with the content so far", async () => {
    const clock = manualSleep();
    const delays: number[] = [];
    const p = provider([{ text: "aaaabbbbcccc" }], {
      chunkChars: 4,
      tokensPerSecond: 2,
      sleep: (ms, signal) => {
        delays.push(ms);
        return clock.sleep(ms, signal);
      },
    });
    const controller = new AbortController();
    const seen: AssistantStreamEvent[] = [];
    const done = (async () => {
      for await (const e of p.streamFn(context, options, controller.signal)) seen.push(e);
    })();
    await flush();
    expect(seen.map((e) => e.type)).toEqual(["start", "text_start"]);
    await clock.tick();
    expect(seen.map((e) => e.type)).toEqual(["start", "text_start", "text_delta"]);
    controller.abort();
    await done;
    expect(delays).toEqual([500, 500]);
    expect(seen.at(-1)).toEqual({
      type: "error",
      reason: "aborted",
      error: expect.objectContaining({
        content: [{ type: "text", text: "aaaa" }],
        stopReason: "aborted",
        errorMessage: "Request was aborted",
      }),
    });
  });

  it("a rate without a sleep port is a programmer mistake", () => {
    expect(() => provider([{ text: "x" }], { tokensPerSecond: 5 })).toThrow("sleep port");
  });

  it("steps may be functions of the request; throwing steps and exhaustion give error responses", async () => {
    const p = provider([
      ({ callIndex, context: c }) => ({ text: `call ${callIndex} saw ${c.messages.length}` }),
      () => {
        throw new Error("step broke");
      },
    ]);
    const first = await collect(p.streamFn(context, options, undefined));
    expect(first.at(-1)).toMatchObject({
      type: "done",
      message: { content: [{ type: "text", text: "call 0 saw 1" }] },
    });
    const second = await collect(p.streamFn(context, options, undefined));
    expect(second).toEqual([
      {
        type: "error",
        reason: "error",
        error: expect.objectContaining({ stopReason: "error", errorMessage: "step broke", content: [] }),
      },
    ]);
    const third = await collect(p.streamFn(context, options, undefined));
    expect(third[0]).toMatchObject({ type: "error", error: { errorMessage: NO_MORE_STEPS } });
    expect(p.remaining).toBe(0);
  });

  it("builds from a parsed script", async () => {
    const parsed = parseScript('{"model":"fixed","api":"my-api","turns":[{"text":"x"}]}');
    if (!parsed.ok) throw new Error(parsed.error);
    const p = scriptedProviderFromScript(parsed.value, { now: () => T0 });
    const events = await collect(p.streamFn(context, options, undefined));
    expect(events.at(-1)).toMatchObject({
      type: "done",
      message: { api: "my-api", model: "fixed", provider: "scripted" },
    });
  });
});
