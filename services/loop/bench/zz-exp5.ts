import { createScriptedProvider } from "../src/engine/scripted-provider.js";
import { SessionEngine } from "../src/engine/session-engine.js";
import { Agent } from "@mariozechner/pi-agent-core";
const config = { model: { provider: "scripted", modelId: "scripted-1" }, thinkingLevel: "off", systemPrompt: "x", activeTools: null, steeringMode: "one-at-a-time", followUpMode: "one-at-a-time", toolExecution: "parallel" } as const;
const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const step = { text: "Hello! How can I help?", usage };
const model = { id: "scripted-1", name: "s", api: "scripted", provider: "scripted", baseUrl: "", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1, maxTokens: 1 } as never;
let n = 0;
const ports = { streamFn: (() => []) as never, executeTool: async () => ({ content: [] }), emit: () => {}, now: Date.now, newId: () => `id-${++n}` };
const variants: Record<string, () => unknown> = {
  engineCtor: () => new SessionEngine({ ports, tools: [], init: { messages: [], leafId: null, config } }),
  providerCtor: () => createScriptedProvider({ steps: [step], now: Date.now }),
  providerCall: () => { const p = createScriptedProvider({ steps: [step], now: Date.now }); return p.streamFn({ systemPrompt: "", messages: [], tools: [] }, { model: config.model, thinkingLevel: "off" }, undefined); },
  agentCtor: () => { const a = new Agent({ initialState: { systemPrompt: "x", model, thinkingLevel: "off", tools: [] } }); a.subscribe(() => {}); return a; },
  abortCtl: () => new AbortController(),
};
const best: Record<string, number> = {};
let sink: unknown;
for (let trial = 0; trial < 8; trial++) for (const [k, f] of Object.entries(variants)) {
  const N = 50000; const t0 = performance.now(); for (let i = 0; i < N; i++) sink = f();
  const us = (performance.now() - t0) / N * 1000; if (trial > 1) best[k] = Math.min(best[k] ?? 1e9, us);
}
void sink;
for (const [k, v] of Object.entries(best)) console.log(k.padEnd(14), v.toFixed(2), "µs");
