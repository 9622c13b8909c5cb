import { createInProcessExecutor } from "../src/engine/in-process-tools.js";
import { createScriptedProvider } from "../src/engine/scripted-provider.js";
import { SessionEngine } from "../src/engine/session-engine.js";
const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const config = { model: { provider: "scripted", modelId: "scripted-1" }, thinkingLevel: "off", systemPrompt: "x", activeTools: null, steeringMode: "one-at-a-time", followUpMode: "one-at-a-time", toolExecution: "parallel" } as const;
const parameters = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };
const echo = { name: "echo", description: "e", parameters };
const textTurn = { text: "Hello! How can I help?", usage };
const toolTurn = { content: [1, 2, 3].map((n) => ({ type: "toolCall" as const, id: `call_${n}`, name: "echo", arguments: { text: `arg ${n}` } })), usage };
const executeTool = createInProcessExecutor({ echo: (args) => ({ content: [{ type: "text", text: (args as { text: string }).text }], details: { l: 1 } }) });
let n = 0;
const N = 6000;
for (let trial = 0; trial < 4; trial++) {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const provider = createScriptedProvider({ steps: [toolTurn, textTurn], now: Date.now });
    const engine = new SessionEngine({ ports: { streamFn: provider.streamFn, executeTool, emit: () => {}, now: Date.now, newId: () => `id-${++n}` }, tools: [echo], init: { messages: [], leafId: null, config } });
    await engine.prompt("hi");
  }
  console.log(((performance.now() - t0) / N * 1000).toFixed(1), "µs/run");
}
