// A child's command stored in a real nats-server's FLEET_COMMANDS: a close stored again once its
// copy is gone, left alone while it is still there.
import { childCommandIds, partitionOf, STREAMS, subjects } from "@fleet/protocol";
import { createLogBuilder } from "@fleet/protocol/testing";
import { applyTopology, connectNats, createStreamPublisher, type StreamPublisher } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startedChildCall, writeChildEvents } from "../testing/child-call.js";
import type { ToolDispatcher } from "../tool-dispatcher.js";
import { childAnswered } from "./child-created.js";
import { confirmStored } from "./lost-commands.js";
import { createSubAgentPort } from "./sub-agent-port.js";

const PARTITIONS = 4;
let server: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let publisher: StreamPublisher;
beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "close-confirmation-test" });
  await applyTopology(nc, { partitions: PARTITIONS });
  jsm = await jetstreamManager(nc);
  publisher = createStreamPublisher(nc);
});
afterAll(async () => {
  publisher?.close();
  await nc?.close();
  await server?.stop();
});

const store = async (childId: string) => {
  const subject = subjects.command(1, childId);
  const data = new TextEncoder().encode(`{"close":"${childId}"}`);
  const commandId = `sub.${childId}.abort`;
  const ack = await publisher.publishDurably(subject, data, { msgID: commandId, stream: STREAMS.commands.name });
  if (!ack.ok) throw new Error(ack.error);
  return { stored: { subject, data, commandId, commandType: "abort" as const, seq: ack.seq } };
};

describe("confirmStored", () => {
  it("stores a command again under <id>#<seq> once its copy is gone from the stream", async () => {
    const { stored } = await store("child-lost");
    // Gone as a lost command is (or a handled one: without `handled` the two cannot be told apart).
    await jsm.streams.deleteMessage(STREAMS.commands.name, stored.seq);
    expect(await confirmStored({ jsm, publisher, stored, checkMs: 20, checks: 5 })).toBe("stored_again");
    const again = await jsm.streams.getMessage(STREAMS.commands.name, { last_by_subj: stored.subject });
    expect(again?.seq).toBeGreaterThan(stored.seq);
    expect(again?.header?.get("Nats-Msg-Id")).toBe(`${stored.commandId}#${stored.seq}`);
    expect(new TextDecoder().decode(again?.data)).toBe(new TextDecoder().decode(stored.data));
  });

  it("leaves a command alone while its copy waits in the stream for the child's owner", async () => {
    const { stored } = await store("child-waiting");
    expect(await confirmStored({ jsm, publisher, stored, checkMs: 20, checks: 5 })).toBe("gave_up");
    const info = await jsm.streams.info(STREAMS.commands.name, { subjects_filter: stored.subject });
    expect(info.state.subjects).toEqual({ [stored.subject]: 1 });
  });

  it("stores nothing for a gone copy that the child's log answered, and asks again when it cannot tell", async () => {
    const { stored } = await store("child-answered");
    await jsm.streams.deleteMessage(STREAMS.commands.name, stored.seq);
    const answers: (boolean | undefined)[] = [undefined, true];
    const handled = async () => answers.shift();
    expect(await confirmStored({ jsm, publisher, stored, handled, checkMs: 20, checks: 5 })).toBe("handled");
    expect(answers).toEqual([]);
    const info = await jsm.streams.info(STREAMS.commands.name, { subjects_filter: stored.subject });
    expect(info.state.subjects ?? {}).toEqual({});
  });

  it("stops looking at its signal: a command whose call has ended is not stored again", async () => {
    const { stored } = await store("child-ended");
    await jsm.streams.deleteMessage(STREAMS.commands.name, stored.seq);
    const ended = new AbortController();
    ended.abort();
    const handled = async () => false;
    expect(await confirmStored({ jsm, publisher, stored, handled, signal: ended.signal, checkMs: 20 })).toBe("gave_up");
    const info = await jsm.streams.info(STREAMS.commands.name, { subjects_filter: stored.subject });
    expect(info.state.subjects ?? {}).toEqual({});
  });
});

let logSeed = 0;
/** Writes a child's log: one `command_accepted` per command id (event ids of its own seed). */
async function writeChildLog(
  childId: string,
  commandIds: { id: string; type: "create_session" | "prompt" | "abort" }[],
) {
  const log = createLogBuilder(++logSeed, childId);
  for (const c of commandIds) log.add({ type: "command_accepted", commandId: c.id, commandType: c.type });
  await writeChildEvents(publisher, PARTITIONS, childId, log.events);
}

describe("childAnswered", () => {
  it("finds a command's outcome among the child's first events, and nothing for one not decided", async () => {
    const childId = "child-answered-log";
    await writeChildLog(childId, [
      { id: `sub.${childId}.create`, type: "create_session" },
      { id: `sub.${childId}.prompt`, type: "prompt" },
    ]);
    const topology = { partitions: PARTITIONS, groups: 1 };
    expect(await childAnswered(jsm, topology, childId, `sub.${childId}.prompt`)).toBe(true);
    expect(await childAnswered(jsm, topology, childId, `sub.${childId}.abort`)).toBe(false);
    expect(await childAnswered(jsm, topology, "child-with-no-log", "sub.child-with-no-log.prompt")).toBe(false);
  });
});

describe("sub-agent port: a child's lost commands", () => {
  const settings = {
    maxDepth: 3,
    maxFanOut: 8,
    closePolicy: "terminate" as const,
    timeoutMs: 60_000,
    progressMs: 1_000,
  };
  // Starts the call as the dispatcher does; its answer comes when the call is aborted.
  const dispatcher = {
    execute: async (call: { start?: () => Promise<string | undefined> }, signal: AbortSignal) => {
      const failed = await call.start?.();
      if (!failed && !signal.aborted) await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
      return { content: [{ type: "text", text: failed ?? "aborted" }], isError: true };
    },
    forget: () => undefined,
    close: () => undefined,
  } as unknown as ToolDispatcher;
  const port = () =>
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
      copyCheckMs: 200,
    });
  const decide = (parent: string) => startedChildCall(parent, settings);
  const copies = async (subject: string) => {
    const info = await jsm.streams.info(STREAMS.commands.name, { subjects_filter: subject });
    return Object.values(info.state.subjects ?? {}).reduce((sum, n) => sum + n, 0);
  };

  const childSubject = (childId: string) => subjects.command(partitionOf(childId, PARTITIONS), childId);
  /** The newest command stored on the child's subject, once it has the msgID `msgId`. */
  const storedAs = (childId: string, msgId: string) =>
    vi.waitFor(
      async () => {
        const m = await jsm.streams.getMessage(STREAMS.commands.name, { last_by_subj: childSubject(childId) });
        expect(m?.header?.get("Nats-Msg-Id")).toBe(msgId);
        return m?.seq ?? 0;
      },
      { timeout: 5_000, interval: 50 },
    );

  it("stores again a create whose copy left the stream with no session in the child's log, and a lost close", async () => {
    const decision = decide("parent-lost");
    const ids = childCommandIds(decision.childId);
    const abort = new AbortController();
    const never = new AbortController().signal;
    const running = port().run("parent-lost", "tc-1", decision, abort.signal, () => undefined, never, true);
    try {
      // Lost: no loop worker runs here, so the child's log stays empty.
      const created = await storedAs(decision.childId, ids.create);
      await jsm.streams.deleteMessage(STREAMS.commands.name, created);
      await storedAs(decision.childId, `${ids.create}#${created}`);
      // Once: that copy stays in the stream (nobody handles it), so nothing more is stored.
      await new Promise((r) => setTimeout(r, 1_000));
      expect(await copies(childSubject(decision.childId))).toBe(1);
    } finally {
      abort.abort();
      await running;
    }
    const closed = await storedAs(decision.childId, ids.abort);
    await jsm.streams.deleteMessage(STREAMS.commands.name, closed);
    await storedAs(decision.childId, `${ids.abort}#${closed}`);
  });

  it("an accepted abort closes a running call's child at once (running: true); otherwise the call closes it", async () => {
    const decision = decide("parent-running");
    const ids = childCommandIds(decision.childId);
    const abort = new AbortController();
    const never = new AbortController().signal;
    const sub = port();
    const running = sub.run("parent-running", "tc-1", decision, abort.signal, () => undefined, never, true);
    try {
      await storedAs(decision.childId, ids.create);
      // Skipped while the call runs: its own close follows its start.
      await sub.closeChildren("parent-running", ["tc-1"]);
      expect(await copies(childSubject(decision.childId))).toBe(1);
      // Before the engine ends the call: stored now, the call still running.
      await sub.closeChildren("parent-running", ["tc-1"], { running: true });
      await storedAs(decision.childId, ids.abort);
    } finally {
      abort.abort();
      await running;
    }
    // The call's own close has the same id: the stream keeps one.
    expect(await copies(childSubject(decision.childId))).toBe(2);
  });

  it("leaves a close alone once its copy is gone and the child's log answered it", async () => {
    const decision = decide("parent-closed");
    const ids = childCommandIds(decision.childId);
    const abort = new AbortController();
    const never = new AbortController().signal;
    const running = port().run("parent-closed", "tc-1", decision, abort.signal, () => undefined, never, true);
    await storedAs(decision.childId, ids.create);
    abort.abort();
    await running;
    const closed = await storedAs(decision.childId, ids.abort);
    // Handled: the child's owner logged its outcome and acknowledged it (removed from the stream).
    await writeChildLog(decision.childId, [{ id: ids.abort, type: "abort" }]);
    await jsm.streams.deleteMessage(STREAMS.commands.name, closed);
    await new Promise((r) => setTimeout(r, 1_500));
    // Only the create is left (nobody handles it here): the close was not stored again.
    expect(await copies(childSubject(decision.childId))).toBe(1);
  });
});
