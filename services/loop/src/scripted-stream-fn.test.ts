// The service's scripted provider picks its turn from what a real provider would be sent.
import { type AssistantMessage, type AssistantStreamEvent, emptyUsage, type LlmMessage } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { parseScript } from "./engine/script.js";
import { createScriptedStreamFn } from "./scripted-stream-fn.js";

const script = parseScript(JSON.stringify({ turns: [{ text: "first" }, { text: "second" }, { text: "third" }] }));
if (!script.ok) throw new Error(script.error);
const streamFn = createScriptedStreamFn(script.value, { now: () => 1_000, sleep: async () => undefined });

const assistant = (text: string, stopReason: AssistantMessage["stopReason"]): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "text", text }],
  api: "scripted",
  provider: "scripted",
  model: "scripted-demo",
  usage: emptyUsage(),
  stopReason,
  ...(stopReason === "error" ? { errorMessage: "Run interrupted while streaming (worker w-2 took over)" } : {}),
  timestamp: 1,
});

async function answer(messages: LlmMessage[]): Promise<string> {
  const events: AssistantStreamEvent[] = [];
  const stream = streamFn(
    { systemPrompt: "", messages, tools: [] },
    { model: { provider: "scripted", modelId: "scripted-demo" }, thinkingLevel: "off" },
    undefined,
  );
  for await (const event of stream) events.push(event);
  const last = events.at(-1);
  if (last?.type !== "done") throw new Error(`stream ended with ${last?.type}`);
  return last.message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
}

const user = (text: string): LlmMessage => ({ role: "user", content: text, timestamp: 1 });

describe("scripted stream fn", () => {
  it("serves turn k, counting the assistant messages before the request", async () => {
    expect(await answer([user("a")])).toBe("first");
    expect(await answer([user("a"), assistant("first", "stop"), user("b")])).toBe("second");
  });

  it("serves the same turn again after a message a crash cut (stopReason error)", async () => {
    expect(await answer([user("a"), assistant("fir", "error")])).toBe("first");
  });

  it("does not count an aborted message, which a real provider is not sent either", async () => {
    expect(
      await answer([user("a"), assistant("first", "stop"), user("b"), assistant("sec", "aborted"), user("c")]),
    ).toBe("second");
  });
});
