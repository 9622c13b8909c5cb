// `npm run bench:engine`: Fleet's engine vs pi 0.73.1's Agent on the same in-memory workloads.
//   A: 10,000 one-turn runs (prompt → one text response).
//   B: 1,000 runs of three tool calls (prompt → 3 parallel in-process tools → text response).
// Both sides get a fresh agent (Fleet: a fresh session) per run, the same tool schema and the same
// responses from one stream function per process; pi streams from a custom streamFn
// (createAssistantMessageEventStream), Fleet from its scripted provider. pi's listener does nothing;
// Fleet's emit port stamps and folds each event as the service's shell does (in-memory-session.ts).
import { performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { AssistantMessage } from "@fleet/protocol";
import { Agent, type AgentTool } from "@mariozechner/pi-agent-core";
import {
  type AssistantMessageEvent,
  createAssistantMessageEventStream,
  type Model,
  type AssistantMessage as PiAssistantMessage,
} from "@mariozechner/pi-ai";
import { createInProcessExecutor } from "../src/engine/in-process-tools.js";
import type { ScriptTurnInput } from "../src/engine/script.js";
import { createScriptedProvider } from "../src/engine/scripted-provider.js";
import { SessionEngine } from "../src/engine/session-engine.js";
import { inMemorySession } from "./in-memory-session.js";
import { echo, echoParameters, echoResult, engineConfig, textTurn, toolTurn, usage } from "./workloads.js";

const ONE_TURN_RUNS = 10_000;
const TOOL_RUNS = 1_000;
const WARMUP = 500;

// ---- Fleet -------------------------------------------------------------------------------------

const config = engineConfig;
const executeTool = createInProcessExecutor({ echo: (args) => echoResult((args as { text: string }).text) });
let nextId = 0;
const newId = () => `id-${++nextId}`;

/** pi's listener that does nothing (Fleet's emit port folds each event, as the service does). */
const ignore = (): void => {};

/** One provider per process, as in the service; each run appends its responses. */
const provider = createScriptedProvider({ steps: [], now: Date.now, recordRequests: false });

async function fleetRun(steps: ScriptTurnInput[]): Promise<void> {
  provider.append(...steps);
  const { session, emit } = inMemorySession(newId(), config);
  const engine = new SessionEngine({
    ports: { streamFn: provider.streamFn, executeTool, emit, now: Date.now, newId },
    tools: [echo],
    session,
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
    parameters: echoParameters as never,
    execute: async (_id, params) => echoResult((params as { text: string }).text),
  },
];

/** The same events the scripted provider yields, pushed into pi's event stream. One per process. */
const piTurns: ScriptTurnInput[] = [];
const piStreamFn = () => {
  const turn = piTurns.shift() as ScriptTurnInput;
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
      const toolCall = {
        type: "toolCall" as const,
        id: block.id,
        name: block.name,
        arguments: block.arguments ?? {},
      };
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

async function piRun(steps: ScriptTurnInput[]): Promise<void> {
  piTurns.push(...steps);
  const agent = new Agent({
    initialState: { systemPrompt: "You are a benchmark.", model: piModel, thinkingLevel: "off", tools: piTools },
    streamFn: piStreamFn as never,
  });
  agent.subscribe(ignore);
  await agent.prompt("hi");
  if (agent.state.errorMessage) throw new Error(`pi run failed: ${agent.state.errorMessage}`);
}

// ---- harness -----------------------------------------------------------------------------------
// The machine may be shared. Both sides run interleaved in short rounds (alternating which goes
// first), each round after a full GC, so load spikes and garbage hit both alike. Rates are total
// runs / total time, wall clock and CPU time of this process. The target (Fleet at least as fast as
// pi) is met when both the total CPU-time ratio and the median of the per-round ratios are ≥ 1.0:
// the median, so that a burst of load on a shared machine does not decide the verdict.

const ROUND = 100;

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

interface Spent {
  wallMs: number;
  cpuMs: number;
}

async function timeRuns(count: number, run: () => Promise<void>, spent: Spent): Promise<number> {
  collectGarbage();
  const wall = performance.now();
  const cpu = process.cpuUsage();
  for (let i = 0; i < count; i++) await run();
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000;
  spent.cpuMs += cpuMs;
  spent.wallMs += performance.now() - wall;
  return cpuMs;
}

function report(label: string, runs: number, spent: Spent): void {
  const fmt = (n: number) => Math.round(n).toLocaleString("en-US").padStart(7);
  const wallRate = runs / (spent.wallMs / 1000);
  const cpuRate = runs / (spent.cpuMs / 1000);
  console.log(
    `  ${label.padEnd(6)} ${runs.toLocaleString("en-US").padStart(6)} runs   wall ${(spent.wallMs / 1000).toFixed(3)} s → ${fmt(wallRate)} runs/s   cpu ${(spent.cpuMs / 1000).toFixed(3)} s → ${fmt(cpuRate)} runs/s`,
  );
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

async function workload(name: string, runs: number, steps: () => ScriptTurnInput[]): Promise<boolean> {
  console.log(name);
  const fleet = () => fleetRun(steps());
  const pi = () => piRun(steps());
  await timeRuns(WARMUP, fleet, { wallMs: 0, cpuMs: 0 });
  await timeRuns(WARMUP, pi, { wallMs: 0, cpuMs: 0 });
  const fleetSpent: Spent = { wallMs: 0, cpuMs: 0 };
  const piSpent: Spent = { wallMs: 0, cpuMs: 0 };
  const ratios: number[] = [];
  for (let done = 0, round = 0; done < runs; done += ROUND, round++) {
    const count = Math.min(ROUND, runs - done);
    let fleetMs: number;
    let piMs: number;
    if (round % 2 === 0) {
      fleetMs = await timeRuns(count, fleet, fleetSpent);
      piMs = await timeRuns(count, pi, piSpent);
    } else {
      piMs = await timeRuns(count, pi, piSpent);
      fleetMs = await timeRuns(count, fleet, fleetSpent);
    }
    ratios.push(piMs / fleetMs);
  }
  report("fleet", runs, fleetSpent);
  report("pi", runs, piSpent);
  const total = piSpent.cpuMs / fleetSpent.cpuMs;
  const typical = median(ratios);
  const met = total >= 1 && typical >= 1;
  console.log(
    `  fleet / pi: ${total.toFixed(2)}× (total cpu runs/s), ${typical.toFixed(2)}× (median of ${ratios.length} rounds)  ${met ? "target met" : "BELOW TARGET"}`,
  );
  return met;
}

const okA = await workload(`A. ${ONE_TURN_RUNS.toLocaleString("en-US")} one-turn runs`, ONE_TURN_RUNS, () => [
  textTurn,
]);
const okB = await workload(`B. ${TOOL_RUNS.toLocaleString("en-US")} runs with three tool calls`, TOOL_RUNS, () => [
  toolTurn,
  textTurn,
]);
if (!okA || !okB) process.exitCode = 1;
