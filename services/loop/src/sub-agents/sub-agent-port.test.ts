// The sub-agent port's publishing, with recording fakes for NATS and the tool dispatcher (no server):
// which commands a call sends and when it sends none, what a child reports and under which msgID.
import {
  type AgentVersion,
  childCommandIds,
  childSessionId,
  decodeCommand,
  decodeToolResultRecord,
  emptySpend,
  type FleetEvent,
  type ParentLink,
} from "@fleet/protocol";
import { assistantMessage, textOf } from "@fleet/protocol/testing";
import type { AgentStore, StreamPublisher } from "@fleet/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import pino from "pino";
import { describe, expect, it, vi } from "vitest";
import { decideChildCall } from "../decide/decide-child.js";
import type { ToolDispatcher } from "../tool-dispatcher.js";
import { createSubAgentPort } from "./sub-agent-port.js";

const SETTINGS = { maxDepth: 3, maxFanOut: 8, closePolicy: "terminate" as const, timeoutMs: 60_000, progressMs: 1_000 };
const LINK: ParentLink = {
  sessionId: "parent-1",
  runId: "run-1",
  toolCallId: "tc-1",
  depth: 1,
  closePolicy: "terminate",
};
const WORKER: AgentVersion = { name: "worker", version: 1, settings: {}, createdAt: 1 };

function harness(opts: { agents?: AgentVersion[] } = {}) {
  let clock = 10_000;
  const durable: { subject: string; msgID: string | undefined; data: Uint8Array }[] = [];
  const core: { subject: string; data: Uint8Array }[] = [];
  const publisher = {
    publish: async () => ({ ok: true, stream: "S", seq: 1, duplicate: false }),
    publishDurably: async (subject: string, data: Uint8Array, o: { msgID?: string }) => {
      durable.push({ subject, msgID: o.msgID, data });
      return { ok: true, stream: "S", seq: durable.length, duplicate: false };
    },
    pending: 0,
    close: () => undefined,
  } as unknown as StreamPublisher;
  const nc = {
    publish: (subject: string, data: Uint8Array) => core.push({ subject, data }),
  } as unknown as NatsConnection;
  // A dispatcher that starts the call and answers at once, as a stored result would.
  const dispatcher = {
    execute: async (call: { start?: () => Promise<string | undefined> }) => {
      const failed = await call.start?.();
      return failed
        ? { content: [{ type: "text", text: failed }], isError: true }
        : { content: [{ type: "text", text: "ok" }], isError: false };
    },
    forget: () => undefined,
    close: () => undefined,
  } as unknown as ToolDispatcher;
  const versions = opts.agents ?? [WORKER];
  const agents = {
    get: async (name: string, version?: number) =>
      versions.find((v) => v.name === name && (version === undefined || v.version === version)) ?? null,
    list: async () => versions.map((v) => ({ name: v.name, latest: v.version, updatedAt: 1 })),
  } as unknown as AgentStore;
  const port = createSubAgentPort({
    nc,
    publisher,
    dispatcher,
    agents,
    partitions: 16,
    settings: SETTINGS,
    now: () => clock,
    logger: pino({ level: "silent" }),
  });
  return { port, durable, core, publisher, tick: (ms: number) => (clock += ms) };
}

const start = (args: unknown) => {
  const decision = decideChildCall({
    parentSessionId: "parent-1",
    parentLink: null,
    runId: "run-1",
    toolCallId: "tc-1",
    args,
    ordinal: 0,
    limits: SETTINGS,
  });
  if (decision.kind !== "start") throw new Error("expected a start");
  return decision;
};
const never = new AbortController().signal;

describe("sub-agent port / parent side", () => {
  it("sends create_session then prompt to the child's partition, with the derived ids as msgIDs", async () => {
    const h = harness();
    const result = await h.port.run(
      "parent-1",
      "tc-1",
      start({ agent: "worker", prompt: "go" }),
      never,
      () => undefined,
      never,
      true,
    );
    expect(result.isError).toBe(false);
    const child = childSessionId("parent-1", "tc-1");
    const ids = childCommandIds(child);
    expect(h.durable.map((p) => p.msgID)).toEqual([ids.create, ids.prompt]);
    for (const p of h.durable) expect(p.subject).toMatch(new RegExp(`^fleet\\.cmd\\.\\d+\\.${child}$`));
    const sent = h.durable.map((p) => decodeCommand(p.data));
    expect(sent[0]?.ok && sent[0].value).toMatchObject({
      type: "create_session",
      agent: "worker",
      parent: { depth: 1 },
    });
    expect(sent[1]?.ok && sent[1].value).toMatchObject({ type: "prompt", text: "go" });
  });

  it("a named agent that does not exist sends nothing and is the call's error", async () => {
    const h = harness({ agents: [] });
    const result = await h.port.run(
      "parent-1",
      "tc-1",
      start({ agent: "ghost", prompt: "go" }),
      never,
      () => undefined,
      never,
      true,
    );
    expect(result).toMatchObject({ isError: true, content: [{ text: "Sub-agent refused: agent ghost not found" }] });
    expect(h.durable).toEqual([]);
  });

  it("the parent's abort sends the child its close command (terminate: abort)", async () => {
    const h = harness();
    const abort = new AbortController();
    const decision = start({ prompt: "go" });
    const waiting = h.port.run("parent-1", "tc-1", decision, abort.signal, () => undefined, never, true);
    abort.abort();
    await waiting;
    // Stored before the call returns (before its aborted end is appended).
    expect(h.durable.at(-1)?.msgID).toBe(childCommandIds(decision.childId).abort);
  });

  it("a share of the parent's budget is the child's run budget, tighter than its agent's; none left starts nothing", async () => {
    const capped: AgentVersion = {
      ...WORKER,
      settings: { budget: { run: { totalTokens: 100, costUsd: 5 }, session: { totalTokens: 900 } } },
    };
    const h = harness({ agents: [capped] });
    const share = { kind: "share" as const, run: { totalTokens: 400, costUsd: 1 } };
    const result = await h.port.run(
      "parent-1",
      "tc-1",
      start({ agent: "worker", prompt: "go" }),
      never,
      () => undefined,
      never,
      true,
      share,
    );
    expect(result.isError).toBe(false);
    const create = decodeCommand(h.durable[0]?.data ?? new Uint8Array());
    expect(create.ok && create.value.type === "create_session" && create.value.config?.budget).toEqual({
      run: { totalTokens: 100, costUsd: 1 },
      session: { totalTokens: 900 },
    });
    const poor = harness();
    const spent = { kind: "spent" as const, reason: "Sub-agent refused: the parent's budget has no totalTokens left" };
    const refused = await poor.port.run(
      "parent-1",
      "tc-1",
      start({ prompt: "go" }),
      never,
      () => undefined,
      never,
      true,
      spent,
    );
    expect(refused).toMatchObject({ isError: true, content: [{ text: spent.reason }] });
    expect(poor.durable).toEqual([]);
  });

  it("closeChildren closes the children of calls it is not running, and skips one it runs (its own close follows)", async () => {
    const h = harness();
    const decision = start({ prompt: "go" });
    const waiting = h.port.run("parent-1", "tc-1", decision, never, () => undefined, never, true);
    await h.port.closeChildren("parent-1", ["tc-1", "tc-2"]);
    const aborts = () => h.durable.filter((d) => d.msgID?.endsWith(".abort")).map((d) => d.msgID);
    const other = childSessionId("parent-1", "tc-2");
    expect(aborts()).toEqual([childCommandIds(other).abort]);
    await waiting;
    // Once the call is over, it is closed like any other.
    await h.port.closeChildren("parent-1", ["tc-1"]);
    expect(aborts()).toEqual([childCommandIds(other).abort, childCommandIds(decision.childId).abort]);
  });

  it("a resumed call already aborted closes its child; a fresh one sends nothing", async () => {
    const aborted = AbortSignal.abort();
    const resumed = harness();
    const decision = start({ prompt: "go" });
    const result = await resumed.port.run("parent-1", "tc-1", decision, aborted, () => undefined, never, false);
    expect(result.isError).toBe(true);
    expect(resumed.durable.map((d) => d.msgID)).toEqual([childCommandIds(decision.childId).abort]);
    const fresh = harness();
    await fresh.port.run("parent-1", "tc-1", decision, aborted, () => undefined, never, true);
    expect(fresh.durable).toEqual([]);
  });

  it("an abort while the child's commands are being published sends the close after them, never beside", async () => {
    const h = harness();
    // The first publish (create_session) waits until released.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const publish = h.publisher.publishDurably.bind(h.publisher);
    let calls = 0;
    h.publisher.publishDurably = async (...args: Parameters<typeof publish>) => {
      if (calls++ === 0) await gate;
      return publish(...args);
    };
    const abort = new AbortController();
    const decision = start({ prompt: "go" });
    const waiting = h.port.run("parent-1", "tc-1", decision, abort.signal, () => undefined, never, true);
    await new Promise((r) => setImmediate(r));
    abort.abort();
    await new Promise((r) => setImmediate(r));
    expect(h.durable).toEqual([]);
    release();
    await waiting;
    await expect.poll(() => h.durable.length).toBe(2);
    const ids = childCommandIds(decision.childId);
    // create_session, then the close: the prompt was never sent.
    expect(h.durable.map((d) => d.msgID)).toEqual([ids.create, ids.abort]);
  });
});

describe("sub-agent port / child side", () => {
  const child = childSessionId("parent-1", "tc-1");
  const event = (type: string, extra: Record<string, unknown> = {}) =>
    ({ type, ...extra, meta: {} }) as unknown as FleetEvent;

  it("progress goes to the parent's call subject at most once per progressMs", () => {
    const h = harness();
    h.port.childEvent(child, LINK, event("turn_start"));
    h.port.childEvent(child, LINK, event("tool_execution_start", { toolName: "bash" }));
    h.tick(1_000);
    h.port.childEvent(child, LINK, event("tool_execution_start", { toolName: "read" }));
    expect(h.core.map((c) => c.subject)).toEqual([
      "fleet.tool.result.parent-1.tc-1",
      "fleet.tool.result.parent-1.tc-1",
    ]);
    const records = h.core.map((c) => decodeToolResultRecord(c.data));
    expect(records.map((r) => r.ok && r.value)).toEqual([
      { kind: "update", partialResult: { childSessionId: child, event: "turn_start" } },
      { kind: "update", partialResult: { childSessionId: child, event: "tool_execution_start", toolName: "read" } },
    ]);
  });

  it("the last event held back within a window goes out when the window ends", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const h = harness();
      h.port.childEvent(child, LINK, event("turn_start"));
      h.port.childEvent(child, LINK, event("tool_execution_start", { toolName: "bash" }));
      h.port.childEvent(child, LINK, event("tool_execution_start", { toolName: "read" }));
      expect(h.core).toHaveLength(1);
      h.tick(1_000);
      vi.advanceTimersByTime(1_000);
      const records = h.core.map((c) => decodeToolResultRecord(c.data));
      expect(records.map((r) => r.ok && r.value)).toEqual([
        { kind: "update", partialResult: { childSessionId: child, event: "turn_start" } },
        { kind: "update", partialResult: { childSessionId: child, event: "tool_execution_start", toolName: "read" } },
      ]);
      // Nothing more is held: no further record.
      vi.advanceTimersByTime(5_000);
      expect(h.core).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it("progress held back is dropped when the owner's lease fence is shut at the window's end", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const h = harness();
      let held = true;
      const writable = () => Promise.resolve(held);
      h.port.childEvent(child, LINK, event("turn_start"), writable);
      h.port.childEvent(child, LINK, event("tool_execution_start", { toolName: "bash" }), writable);
      expect(h.core).toHaveLength(1);
      // Paused past its lease: when the window ends the fence says the lease is gone.
      held = false;
      h.tick(1_000);
      vi.advanceTimersByTime(1_000);
      await Promise.resolve();
      await Promise.resolve();
      expect(h.core).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("the answer is the final assistant text with the run's spend, stored under <child>.result.<runId>.<epoch>", async () => {
    const h = harness();
    const spent = { ...emptySpend(), totalTokens: 12, inputTokens: 10, outputTokens: 2, costUsd: 0.5 };
    await h.port.childFinished(child, LINK, {
      runId: "r9",
      epoch: 3,
      messages: [assistantMessage([textOf("42")])],
      spent,
    });
    expect(h.durable.map((d) => [d.subject, d.msgID])).toEqual([
      ["fleet.tool.result.parent-1.tc-1", `${child}.result.r9.3`],
    ]);
    const record = decodeToolResultRecord(h.durable[0]?.data ?? new Uint8Array());
    expect(record.ok && record.value).toEqual({
      kind: "result",
      content: [{ type: "text", text: "42" }],
      details: { childSessionId: child, spend: spent },
      isError: false,
    });
  });

  it("a run that ended without an answer, or a refused prompt, is an error result", async () => {
    const h = harness();
    const aborted = { ...assistantMessage([textOf("half")]), stopReason: "aborted" as const };
    await h.port.childFinished(child, LINK, { runId: "r1", epoch: 1, messages: [aborted], spent: emptySpend() });
    await h.port.childRefused(child, LINK, "budget_exceeded: over");
    const records = h.durable.map((d) => decodeToolResultRecord(d.data));
    expect(records.map((r) => r.ok && r.value.kind === "result" && [r.value.isError, r.value.content[0]])).toEqual([
      [true, { type: "text", text: `Sub-agent ${child} ended without an answer (Operation aborted)` }],
      [true, { type: "text", text: `Sub-agent ${child} refused the task (budget_exceeded: over)` }],
    ]);
    expect(h.durable[1]?.msgID).toBe(`${child}.refused`);
  });
});
