// A worker that takes a session over finishes what the log shows as accepted and not done, at the
// point where pi would. Each session's log is written as a worker that died at that point left it
// (its last `owner_change` names a dead worker); then a real worker starts, takes every partition
// over and recovers them. Real nats-server, real tool runner, scripted LLM.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createScriptedProvider, type LoopWorker, type StreamFn } from "@fleet/loop";
import { type AgentMessage, encodeCommand, encodeEvent, type FleetEvent, partitionOf, subjects } from "@fleet/protocol";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  type EventInput,
  type LogBuilder,
  startOf,
  textOf,
  toolCall,
  userMessage,
} from "@fleet/protocol/testing";
import { applyTopology, connectNats, createLogger } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { createToolRunner, defineTool, type ToolRunner } from "@fleet/tools";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { commander, startTestWorker } from "../support/loop-harness.js";

let server: NatsServer;
let nc: NatsConnection;
let runnerNc: NatsConnection;
let runner: ToolRunner;
let workerNc: NatsConnection | undefined;
let worker: LoopWorker | undefined;
let workspace: string;
let cmd: ReturnType<typeof commander>;

/** LLM requests by session (the last user text of each), answered "recovered". */
const llmCalls = new Map<string, string[]>();
const recording: StreamFn = (context, options, signal) => {
  const sessionId = options.sessionId ?? "?";
  const texts = context.messages.flatMap((m) =>
    m.role === "user"
      ? typeof m.content === "string"
        ? [m.content]
        : m.content.flatMap((c) => (c.type === "text" ? [c.text] : []))
      : [],
  );
  llmCalls.set(sessionId, [...(llmCalls.get(sessionId) ?? []), texts.at(-1) ?? ""]);
  return createScriptedProvider({ steps: [{ text: "recovered" }], now: Date.now }).streamFn(context, options, signal);
};

/** How often the gated tool ran, by tool call id. */
const ran = new Map<string, number>();
const gated = defineTool({
  name: "gated",
  description: "counts its runs",
  parameters: z.object({}),
  async execute(_args, ctx) {
    ran.set(ctx.toolCallId, (ran.get(ctx.toolCallId) ?? 0) + 1);
    return { content: [{ type: "text", text: "gated ran" }] };
  },
});

const config = { ...CONFIG, model: { provider: "scripted", modelId: "before" } };
const DEAD = { type: "owner_change", workerId: "dead-worker", partition: 0, epoch: 1 } as const;

/** A session's log as the dead worker left it (owner_change first, after session_created). */
function log(sessionId: string, seed: number): LogBuilder {
  const b = createLogBuilder(seed, sessionId);
  b.add({ type: "session_created", config });
  b.add({ ...DEAD, partition: partitionOf(sessionId, 16) });
  return b;
}

/** Adds a command's acceptance events, marked with its id as the decider marks them. */
function accepted(b: LogBuilder, commandId: string, commandType: string, ...rest: EventInput[]): FleetEvent[] {
  const out = [b.add({ type: "command_accepted", commandId, commandType })];
  for (const body of rest) {
    const e = b.add(body);
    e.meta.commandId = commandId;
    out.push(e);
  }
  return out;
}

/** A run opened by a prompt, up to the end of its user message. */
function promptRun(b: LogBuilder, commandId: string, text: string) {
  accepted(b, commandId, "prompt");
  b.add({ type: "agent_start" });
  b.add({ type: "turn_start" });
  const user = userMessage(text);
  b.add({ type: "message_start", message: user });
  b.add({ type: "message_end", message: user });
}

const logs = new Map<string, FleetEvent[]>();

/** An assistant message of the session's own model (the model follows the last assistant message). */
const said = (...args: Parameters<typeof assistantMessage>) => ({
  ...assistantMessage(...args),
  provider: "scripted",
  model: "before",
});

// ---- the logs ----------------------------------------------------------------------------------

function abortMidStream() {
  const b = log("rec-abort", 31);
  promptRun(b, "p-abort", "write a lot");
  const partial = said([textOf("half")]);
  b.add({ type: "message_start", message: startOf(partial) });
  b.add({
    type: "message_update",
    deltas: [
      { type: "text_start", contentIndex: 0 },
      { type: "text_delta", contentIndex: 0, delta: "ha" },
    ],
  });
  accepted(b, "a-abort", "abort");
  return b.events;
}

function writesAtTurnEnd() {
  const b = log("rec-writes", 32);
  promptRun(b, "p-writes", "hello");
  b.add({ type: "message_start", message: startOf(said([textOf("hi")])) });
  b.add({ type: "message_end", message: said([textOf("hi")]) });
  accepted(b, "w-model", "set_model", {
    type: "pending_write",
    commandId: "w-model",
    write: { type: "model_change", provider: "scripted", modelId: "after" },
    eventId: "model-entry",
  });
  accepted(b, "w-name", "set_name", {
    type: "pending_write",
    commandId: "w-name",
    write: { type: "session_info", name: "renamed" },
    eventId: "name-entry",
  });
  b.add({ type: "turn_end", message: said([textOf("hi")]), toolResults: [] });
  return b.events;
}

function steerQueued() {
  const b = log("rec-steer", 33);
  promptRun(b, "p-steer", "first");
  b.add({ type: "message_start", message: startOf(said([textOf("one")])) });
  b.add({ type: "message_end", message: said([textOf("one")]) });
  const steer: AgentMessage = userMessage("steered text");
  accepted(b, "s-steer", "steer", { type: "queue_update", steer: [steer], followUp: [], nextTurn: [] });
  const follow: AgentMessage = userMessage("followed text");
  accepted(b, "f-follow", "follow_up", { type: "queue_update", steer: [steer], followUp: [follow], nextTurn: [] });
  b.add({ type: "turn_end", message: said([textOf("one")]), toolResults: [] });
  return b.events;
}

/** A prompt's run cut before its user message: only the acceptance (with the input) names it. */
function promptCut(sessionId: string, seed: number, turnStarted: boolean) {
  const b = log(sessionId, seed);
  b.add({
    type: "command_accepted",
    commandId: `p-${sessionId}`,
    commandType: "prompt",
    messages: [userMessage(`prompt of ${sessionId}`)],
  });
  b.add({ type: "agent_start" });
  if (turnStarted) b.add({ type: "turn_start" });
  return b.events;
}

/** A run cut between a steering drain's queue_update and the drained message. */
function drainCut() {
  const b = log("rec-drain-cut", 43);
  promptRun(b, "p-drain", "first");
  b.add({ type: "message_start", message: startOf(said([textOf("one")])) });
  b.add({ type: "message_end", message: said([textOf("one")]) });
  const steer: AgentMessage = userMessage("steered before the cut");
  accepted(b, "s-drain", "steer", { type: "queue_update", steer: [steer], followUp: [], nextTurn: [] });
  b.add({ type: "turn_end", message: said([textOf("one")]), toolResults: [] });
  b.add({ type: "turn_start" });
  b.add({ type: "queue_update", steer: [], followUp: [], nextTurn: [], delivering: [steer] });
  return b.events;
}

function approvalRun(sessionId: string, seed: number, callId: string, decided: boolean) {
  const b = log(sessionId, seed);
  promptRun(b, `p-${sessionId}`, "use the tool");
  const asked = said([toolCall(callId, "gated", {})]);
  b.add({ type: "message_start", message: startOf(asked) });
  b.add({ type: "message_end", message: asked });
  b.add({ type: "tool_execution_start", toolCallId: callId, toolName: "gated", args: {} });
  b.add({ type: "tool_approval_requested", toolCallId: callId, toolName: "gated", args: {} });
  if (decided) {
    accepted(b, `ap-${sessionId}`, "approve_tool_call", {
      type: "tool_approval_resolved",
      toolCallId: callId,
      approved: true,
    });
  }
  return b.events;
}

const long = (n: number) => userMessage(`${"x".repeat(40_000)} ${n}`);
function compactionOpen(sessionId: string, seed: number, abort: boolean) {
  const b = log(sessionId, seed);
  for (const n of [1, 2, 3]) {
    b.add({ type: "message_end", message: long(n) });
    b.add({ type: "message_end", message: said([textOf(`ok ${n}`)]) });
  }
  const [, start] = accepted(b, `c-${sessionId}`, "compact", {
    type: "compaction_start",
    reason: "manual",
    instructions: `focus of ${sessionId}`,
  });
  if (start) start.meta.runId = start.meta.id;
  if (abort) {
    const [a] = accepted(b, `a-${sessionId}`, "abort");
    if (a && start) a.meta.runId = start.meta.id;
  }
  return b.events;
}

/** A run with three long exchanges before it, cut by the worker's death inside its automatic compaction. */
function autoCompactionOpen(sessionId: string, seed: number, reason: "threshold" | "overflow") {
  const b = log(sessionId, seed);
  let kept = "";
  for (const n of [1, 2, 3]) {
    if (n === 2) kept = b.nextId();
    b.add({ type: "message_end", message: userMessage(`${sessionId}-${n} ${"y".repeat(40_000)}`) });
    b.add({ type: "message_end", message: said([textOf(`ok ${n}`)], { tokens: 10_000 * n }) });
  }
  promptRun(b, `p-${sessionId}`, `question of ${sessionId}`);
  if (reason === "overflow") {
    const overflowed = said([], {
      stopReason: "error",
      errorMessage: "400 invalid_request_error: prompt is too long: 213462 tokens > 200000 maximum",
    });
    b.add({ type: "message_start", message: startOf(overflowed) });
    b.add({ type: "message_end", message: overflowed });
  }
  b.add({ type: "compaction_start", reason });
  if (reason === "overflow") {
    // the entry made it to the log; its compaction_end did not
    b.add({ type: "compaction", summary: "summary by the dead worker", firstKeptEntryId: kept, tokensBefore: 30_000 });
  }
  return b.events;
}

function promptNotStarted() {
  const b = log("rec-unstarted", 37);
  accepted(b, "p-unstarted", "prompt");
  return b.events;
}

/** A prompt accepted with its messages logged (change 31), whose command the stream then lost. */
function promptNotStartedCommandLost() {
  const b = log("rec-unstarted-lost", 44);
  b.add({
    type: "command_accepted",
    commandId: "p-lost",
    commandType: "prompt",
    messages: [userMessage("start me without my command")],
  });
  return b.events;
}

async function publishLog(js: ReturnType<typeof jetstream>, events: FleetEvent[]) {
  for (const e of events) {
    const encoded = encodeEvent(e);
    if (!encoded.ok) throw new Error(`${e.type}: ${encoded.error}`);
    await js.publish(subjects.event(partitionOf(e.meta.sessionId, 16), e.meta.sessionId), encoded.bytes, {
      msgID: e.meta.id,
    });
  }
}

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "recovery-test" });
  await applyTopology(nc, { partitions: 16 });
  workspace = mkdtempSync(join(tmpdir(), "fleet-recovery-"));
  runnerNc = await connectNats({ url: server.url, name: "recovery-runner" });
  runner = createToolRunner({
    nc: runnerNc,
    tools: [gated],
    workspaceRoot: workspace,
    logger: createLogger("t", { level: "silent" }),
  });
  await runner.start();
  cmd = commander(nc);
  logs.set("rec-abort", abortMidStream());
  logs.set("rec-writes", writesAtTurnEnd());
  logs.set("rec-steer", steerQueued());
  logs.set("rec-approved", approvalRun("rec-approved", 34, "call-approved", true));
  logs.set("rec-asked", approvalRun("rec-asked", 35, "call-asked", false));
  logs.set("rec-compact", compactionOpen("rec-compact", 36, false));
  logs.set("rec-compact-abort", compactionOpen("rec-compact-abort", 38, true));
  logs.set("rec-unstarted", promptNotStarted());
  logs.set("rec-unstarted-lost", promptNotStartedCommandLost());
  logs.set("rec-cut-start", promptCut("rec-cut-start", 41, false));
  logs.set("rec-cut-turn", promptCut("rec-cut-turn", 42, true));
  logs.set("rec-drain-cut", drainCut());
  logs.set("rec-auto-threshold", autoCompactionOpen("rec-auto-threshold", 39, "threshold"));
  logs.set("rec-auto-overflow", autoCompactionOpen("rec-auto-overflow", 40, "overflow"));
  const js = jetstream(nc);
  for (const events of logs.values()) await publishLog(js, events);
  // The prompt whose acceptance the dead worker logged is still in the command stream, unacked.
  const prompt = encodeCommand({ type: "prompt", id: "p-unstarted", sessionId: "rec-unstarted", text: "start me" });
  if (!prompt.ok) throw new Error(prompt.error);
  await js.publish(subjects.command(partitionOf("rec-unstarted", 16), "rec-unstarted"), prompt.bytes, {
    msgID: "p-unstarted",
  });
  const started = await startTestWorker({
    url: server.url,
    providers: { scripted: recording },
    workerId: "heir",
    approvalTools: ["gated"],
  });
  worker = started.worker;
  workerNc = started.nc;
});

afterAll(async () => {
  await worker?.stop();
  await workerNc?.close();
  await runner?.stop({ graceMs: 0 });
  await runnerNc?.close();
  await nc?.close();
  await server?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

/** The events the heir appended. */
const appended = (events: FleetEvent[]) => events.filter((e) => e.meta.producer === "heir");
const ended = (events: FleetEvent[]) => events.some((e) => e.type === "agent_end");

describe("takeover / what a dead worker accepted is carried out from the log", () => {
  it("an abort accepted mid-stream: the run ends aborted with the streamed text, no LLM call", async () => {
    const events = await cmd.waitFor("rec-abort", ended, 15_000);
    const mine = appended(events);
    expect(mine.map((e) => e.type)).toEqual(["owner_change", "run_resumed", "message_end", "turn_end", "agent_end"]);
    const end = mine.find((e) => e.type === "message_end");
    expect(end?.type === "message_end" && end.message.role === "assistant" && end.message.stopReason).toBe("aborted");
    expect(end?.type === "message_end" && end.message.role === "assistant" && end.message.content).toEqual([
      textOf("ha"),
    ]);
    expect(llmCalls.get("rec-abort")).toBeUndefined();
  });

  it("writes pending at a crash after turn_end are flushed with the ids they named, before agent_end", async () => {
    const events = await cmd.waitFor("rec-writes", ended, 15_000);
    const mine = appended(events);
    expect(mine.map((e) => `${e.type}:${e.meta.id.length > 12 ? "*" : e.meta.id}`)).toEqual([
      "owner_change:*",
      "run_resumed:*",
      "model_change:model-entry",
      "session_info:name-entry",
      "agent_end:*",
    ]);
    const runId = events.find((e) => e.type === "agent_start")?.meta.runId;
    expect(mine.slice(1).every((e) => e.meta.runId === runId)).toBe(true);
  });

  it("a steer and a follow-up queued before the crash are delivered as pi would: steer first, then the follow-up", async () => {
    const events = await cmd.waitFor("rec-steer", ended, 15_000);
    expect([...llmCalls.keys()]).toContain("rec-steer");
    expect(llmCalls.get("rec-steer")).toEqual(["steered text", "followed text"]);
    const lastQueues = events.filter((e) => e.type === "queue_update").at(-1);
    expect(lastQueues).toMatchObject({ steer: [], followUp: [], nextTurn: [] });
    expect(events.filter((e) => e.type === "agent_end")).toHaveLength(1);
  });

  it("an approval decided before the crash: the call runs once, with no second start or request", async () => {
    const events = await cmd.waitFor("rec-approved", ended, 15_000);
    expect(ran.get("call-approved")).toBe(1);
    expect(events.filter((e) => e.type === "tool_execution_start")).toHaveLength(1);
    expect(events.filter((e) => e.type === "tool_approval_requested")).toHaveLength(1);
    const end = events.find((e) => e.type === "tool_execution_end");
    expect(end?.type === "tool_execution_end" && end.isError).toBe(false);
  });

  it("an approval requested and not decided: the heir waits at the gate without asking again; a decision then runs it once", async () => {
    await cmd.waitFor("rec-asked", (ev) => ev.some((e) => e.type === "run_resumed"), 15_000);
    await new Promise((r) => setTimeout(r, 300));
    let events = await cmd.events("rec-asked");
    expect(events.filter((e) => e.type === "tool_approval_requested")).toHaveLength(1);
    expect(ended(events)).toBe(false);
    await cmd.send("rec-asked", { type: "approve_tool_call", toolCallId: "call-asked" });
    events = await cmd.waitFor("rec-asked", ended, 15_000);
    expect(ran.get("call-asked")).toBe(1);
    expect(events.filter((e) => e.type === "tool_execution_start")).toHaveLength(1);
    expect(events.filter((e) => e.type === "tool_approval_resolved")).toHaveLength(1);
  });

  it("an open compaction is redone with the command's focus: the entry, then compaction_end", async () => {
    const events = await cmd.waitFor("rec-compact", (ev) => ev.some((e) => e.type === "compaction_end"), 15_000);
    const mine = appended(events);
    expect(mine.at(-1)).toMatchObject({ type: "compaction_end", aborted: false });
    expect(mine.map((e) => e.type)).toEqual(["owner_change", "compaction", "compaction_end"]);
    const start = events.find((e) => e.type === "compaction_start");
    expect(mine[1]?.meta.runId).toBe(start?.meta.id);
    expect(mine[2]).toMatchObject({ type: "compaction_end", reason: "manual", aborted: false, willRetry: false });
    expect(mine[2]?.meta.runId).toBeUndefined();
    expect(mine[1]?.type === "compaction" && mine[1].summary).toContain("recovered");
    // summary requests carry no session id: they are told apart by the command's focus
    const all = [...llmCalls.values()].flat();
    expect(
      all.filter((t) => t.includes("Additional focus: focus of rec-compact\n") || t.endsWith("focus of rec-compact")),
    ).toHaveLength(1);
  });

  it("an open compaction whose abort was accepted ends aborted, with no LLM call", async () => {
    const events = await cmd.waitFor("rec-compact-abort", (ev) => ev.some((e) => e.type === "compaction_end"), 15_000);
    expect(appended(events).map((e) => e.type)).toEqual(["owner_change", "compaction_end"]);
    expect(events.at(-1)).toMatchObject({ type: "compaction_end", aborted: true });
    expect([...llmCalls.values()].flat().some((t) => t.includes("focus of rec-compact-abort"))).toBe(false);
  });

  it("a prompt accepted whose run never began starts once its command is redelivered; no second outcome", async () => {
    const events = await cmd.waitFor("rec-unstarted", ended, 15_000);
    expect(events.filter((e) => e.type === "command_accepted")).toHaveLength(1);
    expect(events.filter((e) => e.type === "agent_start")).toHaveLength(1);
    expect(llmCalls.get("rec-unstarted")).toEqual(["start me"]);
  });

  it("a prompt accepted with its messages whose run never began, and whose command is gone: the heir starts it from the log", async () => {
    const events = await cmd.waitFor("rec-unstarted-lost", ended, 15_000);
    expect(events.filter((e) => e.type === "command_accepted")).toHaveLength(1);
    expect(events.filter((e) => e.type === "agent_start")).toHaveLength(1);
    expect(llmCalls.get("rec-unstarted-lost")).toEqual(["start me without my command"]);
  });

  for (const [sessionId, where] of [
    ["rec-cut-start", "after agent_start"],
    ["rec-cut-turn", "after turn_start"],
  ] as const) {
    it(`a prompt's run cut ${where}: the heir delivers the logged prompt, then calls the LLM with it`, async () => {
      const events = await cmd.waitFor(sessionId, ended, 15_000);
      expect(llmCalls.get(sessionId)).toEqual([`prompt of ${sessionId}`]);
      const users = events.filter((e) => e.type === "message_end" && e.message.role === "user");
      expect(users).toHaveLength(1);
      expect(users[0]?.meta.producer).toBe("heir");
      const roles = appended(events).flatMap((e) => (e.type === "message_end" ? [e.message.role] : []));
      expect(roles).toEqual(["user", "assistant"]);
      expect(appended(events).filter((e) => e.type === "turn_start")).toHaveLength(
        sessionId === "rec-cut-turn" ? 0 : 1,
      );
    });
  }

  it("a run cut between a steering drain and the steer: the heir delivers the steer, then calls the LLM", async () => {
    const events = await cmd.waitFor("rec-drain-cut", ended, 15_000);
    expect(llmCalls.get("rec-drain-cut")).toEqual(["steered before the cut"]);
    const delivered = appended(events).filter((e) => e.type === "message_end" && e.message.role === "user");
    expect(delivered).toHaveLength(1);
    expect(events.filter((e) => e.type === "agent_end")).toHaveLength(1);
  });

  it("a run cut inside its threshold compaction: the heir redoes the summary, then makes the LLM call", async () => {
    const events = await cmd.waitFor("rec-auto-threshold", ended, 15_000);
    const mine = appended(events).filter((e) => e.type !== "message_update");
    expect(mine.map((e) => (e.type === "message_end" ? `me:${e.message.role}` : e.type))).toEqual([
      "owner_change",
      "run_resumed",
      "compaction",
      "compaction_end",
      "message_start",
      "me:assistant",
      "turn_end",
      "agent_end",
    ]);
    const runId = events.find((e) => e.type === "agent_start")?.meta.runId;
    expect(mine.slice(1).every((e) => e.meta.runId === runId)).toBe(true);
    expect(mine.find((e) => e.type === "compaction_end")).toMatchObject({ reason: "threshold", aborted: false });
    expect(events.filter((e) => e.type === "compaction_start")).toHaveLength(1);
    // one summary request (it names the history), then the run's call on the compacted context
    const summaries = [...llmCalls.values()].flat().filter((t) => t.includes("[User]: rec-auto-threshold-1 "));
    expect(summaries).toHaveLength(1);
    expect(llmCalls.get("rec-auto-threshold")).toEqual(["question of rec-auto-threshold"]);
  });

  it("a run cut after its overflow compaction's entry: the heir only closes it and retries the call once", async () => {
    const events = await cmd.waitFor("rec-auto-overflow", ended, 15_000);
    const mine = appended(events).filter((e) => e.type !== "message_update");
    expect(mine.map((e) => (e.type === "message_end" ? `me:${e.message.role}` : e.type))).toEqual([
      "owner_change",
      "run_resumed",
      "compaction_end",
      "message_start",
      "me:assistant",
      "turn_end",
      "agent_end",
    ]);
    expect(mine[2]).toMatchObject({ type: "compaction_end", reason: "overflow", aborted: false, willRetry: true });
    expect(events.filter((e) => e.type === "compaction")).toHaveLength(1);
    expect([...llmCalls.values()].flat().some((t) => t.includes("[User]: rec-auto-overflow-1 "))).toBe(false);
    expect(llmCalls.get("rec-auto-overflow")).toEqual(["question of rec-auto-overflow"]);
    const end = events.at(-1);
    expect(
      end?.type === "agent_end" && end.messages.map((m) => (m.role === "assistant" ? m.stopReason : m.role)),
    ).toEqual(["user", "error", "stop"]);
  });
});
