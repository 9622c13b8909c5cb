// `npm run bench:engine`: Fleet's engine vs pi 0.73.1's Agent on the same in-memory workloads.
//   A: 10,000 one-turn runs (prompt → one text response).
//   B: 1,000 runs of three tool calls (prompt → 3 parallel in-process tools → text response).
// Both sides get a fresh agent per run, a no-op listener, the same tool schema and the same
// responses; pi streams from a custom streamFn (createAssistantMessageEventStream), Fleet from its
// scripted provider.
import { performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { AssistantMessage, SessionConfig } from "@fleet/protocol";
import { Agent, type AgentTool } from "@mariozechner/pi-agent-core";
import {
  type AssistantMessage as PiAssistantMessage,
  type AssistantMessageEvent,
  createAssistantMessageEventStream,
  type Model,
} from "@mariozechner/pi-ai";
import { createInProcessExecutor } from "../src/engine/in-process-tools.js";
import type { ScriptTurnInput } from "../src/engine/script.js";
import { createScriptedProvider } from "../src/engine/scripted-provider.js";
import { SessionEngine } from "../src/engine/session-engine.js";
import type { ToolDefinition } from "../src/engine/types.js";

const ONE_TURN_RUNS = 10_000;
const TOOL_RUNS = 1_000;
const WARMUP = 500;

const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const parameters = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };
const echo: ToolDefinition = { name: "echo", description: "Echoes its text", parameters };
const echoResult = (text: string) => ({ content: [{ type: "text" as const, text }], details: { length: text.length } });

const textTurn: ScriptTurnInput = { text: "Hello! How can I help?", usage };
const toolTurn: ScriptTurnInput = {
  content: [1, 2, 3].map((n) => ({ type: "toolCall" as const, id: `call_${n}`, name: "echo", arguments: { text: `arg ${n}` } })),
  usage,
};

// ---- Fleet -------------------------------------------------------------------------------------

const config: SessionConfig = {
  model: { provider: "scripted", modelId: "scripted-1" },
  thinkingLevel: "off",
  systemPrompt: "You are a benchmark.",
  activeTools: null,
  steeringMode: "one-at-a-time",
  followUpMode: "one-at-a-time",
  toolExecution: "parallel",
};
const executeTool = createInProcessExecutor({ echo: (args) => echoResult((args as { text: string }).text) });
let nextId = 0;
const newId = () => `id-${++nextId}`;

async function fleetRun(steps: ScriptTurnInput[]): Promise<void> {
  const provider = createScriptedProvider({ steps, now: Date.now });
  const engine = new SessionEngine({
    ports: { streamFn: provider.streamFn, executeTool, emit: () => {}, now: Date.now, newId },
    tools: [echo],
    init: { messages: [], leafId: null, config },
  });
  const result = await engine.prompt("hi");
  if (result.status !== "completed") throw new Error(`fleet run ${result.status}`);
}

// ---- pi ----------------------------------------------------------------------------------------

const piModel: Model<string> = {
  id: "scripted-1",
  name: "scripted-1",
  api: "scripted",
  provider: "scripted",
  baseUrl: "",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128_000,
  maxTokens: 16_384,
};
const piTools: AgentTool[] = [
  {
    name: "echo",
    label: "echo",
    description: echo.description,
    parameters: parameters as never,
    execute: async (_id, params) => echoResult((params as { text: string }).text),
  },
];

/** The same events the scripted provider yields, pushed into pi's event stream. */
function piStreamFn(turns: ScriptTurnInput[]) {
  let call = 0;
  return () => {
    const turn = turns[call++] as ScriptTurnInput;
    const stream = createAssistantMessageEventStream();
    const base: AssistantMessage = {
      role: "assistant",
      content: [],
      api: "scripted",
      provider: "scripted",
      model: "scripted-1",
      usage,
      stopReason: turn.content?.length ? "toolUse" : "stop",
      timestamp: Date.now(),
    };
    const events: AssistantMessageEvent[] = [];
    let partial = { ...base } as PiAssistantMessage;
    events.push({ type: "start", partial });
    const blocks = turn.content?.length ? turn.content : [{ type: "text" as const, text: turn.text ?? "" }];
    blocks.forEach((block, contentIndex) => {
      if (block.type === "text") {
        partial = { ...partial, content: [...partial.content, { type: "text", text: "" }] };
        events.push({ type: "text_start", contentIndex, partial });
        partial = { ...partial, content: [...partial.content.slice(0, -1), { type: "text", text: block.text }] };
        events.push({ type: "text_delta", contentIndex, delta: block.text, partial });
        events.push({ type: "text_end", contentIndex, content: block.text, partial });
      } else if (block.type === "toolCall") {
        const toolCall = { type: "toolCall" as const, id: block.id, name: block.name, arguments: block.arguments ?? {} };
        partial = { ...partial, content: [...partial.content, { ...toolCall, arguments: {} }] };
        events.push({ type: "toolcall_start", contentIndex, partial });
        events.push({ type: "toolcall_delta", contentIndex, delta: JSON.stringify(toolCall.arguments), partial });
        partial = { ...partial, content: [...partial.content.slice(0, -1), toolCall] };
        events.push({ type: "toolcall_end", contentIndex, toolCall, partial });
      }
    });
    const final = { ...base, content: partial.content } as PiAssistantMessage;
    events.push({ type: "done", reason: base.stopReason as "stop" | "toolUse", message: final });
    for (const event of events) stream.push(event);
    stream.end(final);
    return stream;
  };
}

async function piRun(steps: ScriptTurnInput[]): Promise<void> {
  const agent = new Agent({
    initialState: { systemPrompt: "You are a benchmark.", model: piModel, thinkingLevel: "off", tools: piTools },
    streamFn: piStreamFn(steps) as never,
  });
  agent.subscribe(() => {});
  await agent.prompt("hi");
  if (agent.state.errorMessage) throw new Error(`pi run failed: ${agent.state.errorMessage}`);
}

// ---- harness -----------------------------------------------------------------------------------
// The machine may be shared: both sides run interleaved in rounds of ROUND runs (alternating which
// goes first), so load spikes hit both alike. Each side's rate is total runs / total time, wall
// clock and CPU time of this process; the target is judged on CPU time, which other processes on
// the machine do not inflate.

const ROUND = 500;

// A full collection before every timed round, so each side pays for its own garbage only.
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

interface Spent {
  wallMs: number;
  cpuMs: number;
}

async function timeRuns(count: number, run: () => Promise<void>, spent: Spent): Promise<void> {
  collectGarbage();
  const wall = performance.now();
  const cpu = process.cpuUsage();
  for (let i = 0; i < count; i++) await run();
  const used = process.cpuUsage(cpu);
  spent.cpuMs += (used.user + used.system) / 1000;
  spent.wallMs += performance.now() - wall;
}

/** Prints wall-clock and CPU-time rates; returns the CPU-time rate (robust on a shared machine). */
function report(label: string, runs: number, spent: Spent): number {
  const wallRate = runs / (spent.wallMs / 1000);
  const cpuRate = runs / (spent.cpuMs / 1000);
  const fmt = (n: number) => Math.round(n).toLocaleString("en-US").padStart(7);
  console.log(
    `  ${label.padEnd(6)} ${runs.toLocaleString("en-US").padStart(6)} runs  wall ${(spent.wallMs / 1000).toFixed(3)} s → ${fmt(wallRate)} runs/s   cpu ${(spent.cpuMs / 1000).toFixed(3)} s → ${fmt(cpuRate)} runs/s`,
  );
  return cpuRate;
}

async function workload(name: string, runs: number, steps: () => ScriptTurnInput[]): Promise<boolean> {
  const fleet = () => fleetRun(steps());
  const pi = () => piRun(steps());
  await timeRuns(WARMUP, fleet, { wallMs: 0, cpuMs: 0 });
  await timeRuns(WARMUP, pi, { wallMs: 0, cpuMs: 0 });
  let bf = Infinity, bp = Infinity;
  for (let round = 0; round < 30; round++) {
    const f = { wallMs: 0, cpuMs: 0 }, p = { wallMs: 0, cpuMs: 0 };
    await timeRuns(runs, fleet, f); await timeRuns(runs, pi, p);
    bf = Math.min(bf, f.cpuMs / runs * 1000); bp = Math.min(bp, p.cpuMs / runs * 1000);
  }
  console.log(name, "fleet", bf.toFixed(1), "µs  pi", bp.toFixed(1), "µs  ratio(pi/fleet)", (bp / bf).toFixed(2));
  return true;
}
await workload("A", 300, () => [textTurn]);
await workload("B", 100, () => [toolTurn, textTurn]);
