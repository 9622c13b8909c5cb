// A child's answer whose record never reached its parent's call, on a real nats-server: the call
// reads it from the child's log once that log stood still for the grace period (change 71).
import { childCommandIds, decodeToolResultRecord, type FleetEvent, STREAMS, subjects } from "@fleet/protocol";
import { assistantMessage, CONFIG, createLogBuilder, textOf } from "@fleet/protocol/testing";
import { applyTopology, connectNats, createStreamPublisher, type StreamPublisher } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startedChildCall, writeChildEvents } from "../testing/child-call.js";
import { createToolDispatcher, type ToolDispatcher } from "../tool-dispatcher.js";
import { createSubAgentPort } from "./sub-agent-port.js";

const PARTITIONS = 4;
let server: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let publisher: StreamPublisher;
let dispatcher: ToolDispatcher;
beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "lost-answer-test" });
  await applyTopology(nc, { partitions: PARTITIONS });
  jsm = await jetstreamManager(nc);
  publisher = createStreamPublisher(nc);
  dispatcher = createToolDispatcher({ nc, publisher, jsm, now: Date.now, resultRecheckMs: 100 });
});
afterAll(async () => {
  dispatcher?.close();
  publisher?.close();
  await nc?.close();
  await server?.stop();
});

const settings = { maxDepth: 3, maxFanOut: 8, closePolicy: "terminate" as const, timeoutMs: 60_000, progressMs: 1_000 };
const port = (answerGraceMs: number) =>
  createSubAgentPort({
    nc,
    publisher,
    dispatcher,
    agents: undefined,
    partitions: PARTITIONS,
    events: { jsm, groups: 1 },
    settings,
    now: Date.now,
    logger: pino({ level: "silent" }),
    answerGraceMs,
  });

const decide = (parent: string) => startedChildCall(parent, settings);

/** The child's log as its owner appends it: created, the parent's prompt accepted, one run answering `text`. */
function childRun(childId: string, seed: number, text: string, ts?: number): FleetEvent[] {
  const ids = childCommandIds(childId);
  const log = createLogBuilder(seed, childId);
  log.add({ type: "session_created", config: CONFIG });
  log.add({ type: "command_accepted", commandId: ids.create, commandType: "create_session" });
  log.add({ type: "command_accepted", commandId: ids.prompt, commandType: "prompt" });
  log.add({ type: "agent_start" });
  log.add({ type: "turn_start" });
  const reply = assistantMessage([textOf(text)], { tokens: 30 });
  log.add({ type: "message_start", message: reply });
  log.add({ type: "message_end", message: reply });
  log.add({ type: "turn_end", message: reply, toolResults: [] });
  log.add({ type: "agent_end", messages: [reply] });
  return ts === undefined ? log.events : log.events.map((e) => ({ ...e, meta: { ...e.meta, ts } }) as FleetEvent);
}

const writeLog = (childId: string, events: readonly FleetEvent[]) =>
  writeChildEvents(publisher, PARTITIONS, childId, events);

/** The msgIDs of the records stored on the call's result subject, oldest first. */
async function storedRecords(parent: string) {
  const subject = subjects.toolResult(parent, "tc-1");
  const out: { msgId: string | undefined; kind: string | undefined }[] = [];
  let seq = 1;
  for (;;) {
    const msg = await jsm.direct.getMessage(STREAMS.toolResults.name, { seq, next_by_subj: subject });
    if (!msg) return out;
    seq = msg.seq + 1;
    const decoded = decodeToolResultRecord(msg.data);
    out.push({ msgId: msg.header?.get("Nats-Msg-Id"), kind: decoded.ok ? decoded.value.kind : undefined });
  }
}

const never = new AbortController().signal;

describe("sub-agent port: a child's lost answer", () => {
  it("reads the answer from the child's log when its record never came, and stores it on the call's subject", async () => {
    const decision = decide("parent-answer-lost");
    const events = childRun(decision.childId, 31, "the answer is 42");
    // The child ran and ended; its owner's answer record was lost (never stored here).
    await writeLog(decision.childId, events);
    const result = await port(300).run("parent-answer-lost", "tc-1", decision, never, () => undefined, never, true);
    expect(result.isError).toBe(false);
    expect(result.content).toEqual([{ type: "text", text: "the answer is 42" }]);
    expect(result.details).toMatchObject({ childSessionId: decision.childId, spend: { inputTokens: 30 } });
    const runId = events.find((e) => e.type === "agent_end")?.meta.runId;
    expect(await storedRecords("parent-answer-lost")).toEqual([
      { msgId: `${decision.childId}.result.${runId}.log`, kind: "result" },
    ]);
  });

  it("waits out the grace while the child's log is recent, and takes its owner's record when it comes", async () => {
    const decision = decide("parent-answer-late");
    const events = childRun(decision.childId, 32, "late but stored", Date.now());
    await writeLog(decision.childId, events);
    const sub = port(5_000);
    const running = sub.run("parent-answer-late", "tc-1", decision, never, () => undefined, never, true);
    // The owner's record arrives 1 s after the child's run ended: inside the grace, so the call
    // must not have read the log's answer meanwhile.
    await new Promise((r) => setTimeout(r, 1_000));
    const end = events.find((e) => e.type === "agent_end");
    if (end?.type !== "agent_end") throw new Error("no agent_end");
    const runId = end.meta.runId ?? "";
    const spent = { inputTokens: 30, outputTokens: 0, totalTokens: 30, costUsd: 0 };
    await sub.childFinished(decision.childId, decision.link, { runId, epoch: 4, messages: end.messages, spent });
    const result = await running;
    expect(result.content).toEqual([{ type: "text", text: "late but stored" }]);
    expect(await storedRecords("parent-answer-late")).toEqual([
      { msgId: `${decision.childId}.result.${runId}.4`, kind: "result" },
    ]);
  });
});
