import { createScriptedProvider } from "../src/engine/scripted-provider.js";
import { SessionEngine } from "../src/engine/session-engine.js";
const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const config = { model: { provider: "scripted", modelId: "scripted-1" }, thinkingLevel: "off", systemPrompt: "x", activeTools: null, steeringMode: "one-at-a-time", followUpMode: "one-at-a-time", toolExecution: "parallel" } as const;
const step = { text: "Hello! How can I help?", usage };
let n = 0;
const t0 = performance.now();
for (let i = 0; i < 60000; i++) {
  const provider = createScriptedProvider({ steps: [step], now: Date.now });
  const engine = new SessionEngine({ ports: { streamFn: provider.streamFn, executeTool: async () => ({ content: [] }), emit: () => {}, now: Date.now, newId: () => `id-${++n}` }, tools: [], init: { messages: [], leafId: null, config } });
  await engine.prompt("hi");
}
console.log((performance.now() - t0).toFixed(0), "ms");
