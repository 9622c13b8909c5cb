import { agentLoop } from "../src/engine/run-agent-loop.js";
import { SessionEngine } from "../src/engine/session-engine.js";
import type { StreamFn, EnginePorts } from "../src/engine/types.js";
import { Agent } from "@mariozechner/pi-agent-core";
import { createAssistantMessageEventStream } from "@mariozechner/pi-ai";
const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const config = { model: { provider: "scripted", modelId: "scripted-1" }, thinkingLevel: "off", systemPrompt: "x", activeTools: null, steeringMode: "one-at-a-time", followUpMode: "one-at-a-time", toolExecution: "parallel" } as const;
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
const ports: EnginePorts = { streamFn: arrayStream, executeTool: async () => ({ content: [] }), emit: () => {}, now: Date.now, newId: () => `id-${++n}` };
const model = { id: "scripted-1", name: "s", api: "scripted", provider: "scripted", baseUrl: "", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1, maxTokens: 1 } as never;
const piStream = () => {
  const s = createAssistantMessageEventStream();
  let partial: any = { ...msg, content: [] };
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
const variants: Record<string, () => Promise<unknown>> = { shell2: () => new SessionEngine({ ports, tools: [], init: { messages: [], leafId: null, config } }).prompt("hi") };
const _unused = {
  shell: () => new SessionEngine({ ports, tools: [], init: { messages: [], leafId: null, config } }).prompt("hi"),
  loopSignal: () => agentLoop([{ role: "user", content: "hi", timestamp: 1 }], { systemPrompt: "", messages: [], tools: [] }, { model: config.model, thinkingLevel: "off" }, ports, { signal: new AbortController().signal }),
  loopNoSig: () => agentLoop([{ role: "user", content: "hi", timestamp: 1 }], { systemPrompt: "", messages: [], tools: [] }, { model: config.model, thinkingLevel: "off" }, ports),
  pi: async () => { const a = new Agent({ initialState: { systemPrompt: "x", model, thinkingLevel: "off", tools: [] }, streamFn: piStream as never }); a.subscribe(() => {}); await a.prompt("hi"); },
};
const best: Record<string, number> = {};
for (let trial = 0; trial < 12; trial++) {
  for (const [name, fn] of Object.entries(variants)) {
    const N = 10000;
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await fn();
    const us = (performance.now() - t0) / N * 1000;
    if (trial > 0) best[name] = Math.min(best[name] ?? Infinity, us);
  }
}
for (const [k, v] of Object.entries(best)) console.log(k.padEnd(12), v.toFixed(1), "µs/run");
