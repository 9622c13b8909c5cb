import { createScriptedProvider } from "../src/engine/scripted-provider.js";
import { SessionEngine } from "../src/engine/session-engine.js";
import type { StreamFn } from "../src/engine/types.js";
const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const config = { model: { provider: "scripted", modelId: "scripted-1" }, thinkingLevel: "off", systemPrompt: "x", activeTools: null, steeringMode: "one-at-a-time", followUpMode: "one-at-a-time", toolExecution: "parallel" } as const;
const step = { text: "Hello! How can I help?", usage };
const msg = { role: "assistant", content: [{ type: "text", text: "Hello! How can I help?" }], api: "scripted", provider: "scripted", model: "scripted-1", usage, stopReason: "stop", timestamp: 1 } as const;
const events = [
  { type: "start", partial: { ...msg, content: [] } },
  { type: "text_start", contentIndex: 0 },
  { type: "text_delta", contentIndex: 0, delta: "Hello! How can I help?" },
  { type: "text_end", contentIndex: 0, content: "Hello! How can I help?" },
  { type: "done", reason: "stop", message: msg },
];
const arrayStream: StreamFn = () => ({ [Symbol.asyncIterator]() { let i = 0; return { next: () => Promise.resolve(i < events.length ? { value: events[i++] as never, done: false } : { value: undefined, done: true as const }) }; } });
let n = 0;
async function time(label: string, make: () => StreamFn, N = 20000) {
  for (let w = 0; w < 2; w++) {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) {
      const engine = new SessionEngine({ ports: { streamFn: make(), executeTool: async () => ({ content: [] }), emit: () => {}, now: Date.now, newId: () => `id-${++n}` }, tools: [], init: { messages: [], leafId: null, config } });
      await engine.prompt("hi");
    }
    if (w === 1) console.log(label, ((performance.now() - t0) / N * 1000).toFixed(1), "µs/run");
  }
}
await time("scripted", () => createScriptedProvider({ steps: [step], now: Date.now }).streamFn);
await time("array   ", () => arrayStream);
import { Agent } from "@mariozechner/pi-agent-core";
import { createAssistantMessageEventStream } from "@mariozechner/pi-ai";
const model = { id: "scripted-1", name: "s", api: "scripted", provider: "scripted", baseUrl: "", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1, maxTokens: 1 } as never;
const piStream = () => {
  const s = createAssistantMessageEventStream();
  const base = { ...msg, content: [] as never[] };
  let partial: any = { ...base };
  s.push({ type: "start", partial });
  partial = { ...partial, content: [{ type: "text", text: "" }] };
  s.push({ type: "text_start", contentIndex: 0, partial });
  partial = { ...partial, content: [{ type: "text", text: "Hello! How can I help?" }] };
  s.push({ type: "text_delta", contentIndex: 0, delta: "Hello! How can I help?", partial });
  s.push({ type: "text_end", contentIndex: 0, content: "Hello! How can I help?", partial });
  s.push({ type: "done", reason: "stop", message: partial });
  s.end(partial);
  return s;
};
for (let w = 0; w < 2; w++) {
  const N = 20000;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const agent = new Agent({ initialState: { systemPrompt: "x", model, thinkingLevel: "off", tools: [] }, streamFn: piStream as never });
    agent.subscribe(() => {});
    await agent.prompt("hi");
  }
  if (w === 1) console.log("pi      ", ((performance.now() - t0) / N * 1000).toFixed(1), "µs/run");
}
