import { decodeToolCallRequest, encodeToolResultRecord, subjects, type ToolResultRecord } from "@fleet/protocol";
import { applyTopology, connectNats, createStreamPublisher, type StreamPublisher } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createToolDispatcher, RESULT_RECHECK_MS, type ToolDispatcher } from "./tool-dispatcher.js";

let server: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let publisher: StreamPublisher;
let dispatcher: ToolDispatcher;
/** Calls the fake runner saw, by toolCallId. */
const dispatched: string[] = [];
/** toolCallId → held back until released (to keep a call waiting). */
const held = new Map<string, () => void>();

const record = (sessionId: string, toolCallId: string, rec: ToolResultRecord) => {
  const encoded = encodeToolResultRecord(rec);
  if (!encoded.ok) throw new Error(encoded.error);
  return js.publish(subjects.toolResult(sessionId, toolCallId), encoded.bytes);
};
const text = (t: string): ToolResultRecord => ({
  kind: "result",
  content: [{ type: "text", text: t }],
  isError: false,
});

/** Subscriptions of the dispatcher's connection, from the server's monitor. */
async function subscriptionsOfDispatcher(): Promise<string[]> {
  const res = await fetch(`${server.monitorUrl}/connz?subs=1`);
  const body = (await res.json()) as { connections: Array<{ name?: string; subscriptions_list?: string[] }> };
  return body.connections.find((c) => c.name === "dispatcher-test")?.subscriptions_list ?? [];
}

beforeAll(async () => {
  server = await startNats({ monitor: true });
  nc = await connectNats({ url: server.url, name: "dispatcher-test" });
  await applyTopology(nc, { partitions: 4 });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  publisher = createStreamPublisher(nc);
  dispatcher = createToolDispatcher({ nc, publisher, jsm, now: Date.now, pickupTimeoutMs: 5_000 });
  // A runner stand-in: answers every `echo` call with its argument, unless the call is held.
  nc.subscribe(subjects.toolCall("echo"), {
    callback: (_e, m) => {
      const req = decodeToolCallRequest(m.data);
      if (!req.ok) return;
      const { sessionId, toolCallId, args } = req.value;
      dispatched.push(toolCallId);
      const answer = () => void record(sessionId, toolCallId, text(`echo ${(args as { text: string }).text}`));
      if (toolCallId.startsWith("hold")) held.set(toolCallId, answer);
      else answer();
    },
  });
  await nc.flush();
});
afterAll(async () => {
  dispatcher?.close();
  publisher?.close();
  await nc?.close();
  await server?.stop();
});

const call = (sessionId: string, toolCallId: string, fresh: boolean) => ({
  sessionId,
  runId: "run-1",
  toolCallId,
  toolName: "echo",
  args: { text: toolCallId },
  timeoutMs: 10_000,
  fresh,
});
const signal = new AbortController().signal;

describe("tool dispatcher", () => {
  it("routes concurrent results of one session to their calls over one session subscription", async () => {
    const [a, b] = await Promise.all([
      dispatcher.execute(call("s-1", "c-a", true), signal, () => undefined),
      dispatcher.execute(call("s-1", "c-b", true), signal, () => undefined),
    ]);
    expect(a.content).toEqual([{ type: "text", text: "echo c-a" }]);
    expect(b.content).toEqual([{ type: "text", text: "echo c-b" }]);
    expect((await subscriptionsOfDispatcher()).filter((s) => s.startsWith("fleet.tool.result."))).toEqual([
      "fleet.tool.result.s-1.*",
    ]);
  });

  it("returns the stored result of a resumed call without dispatching it again", async () => {
    await record("s-2", "c-stored", text("from before the crash"));
    const out = await dispatcher.execute(call("s-2", "c-stored", false), signal, () => undefined);
    expect(out.content).toEqual([{ type: "text", text: "from before the crash" }]);
    expect(dispatched).not.toContain("c-stored");
  });

  it("keeps a forgotten session's subscription until its waiting call ends, then drops it", async () => {
    const waiting = dispatcher.execute(call("s-3", "hold-1", true), signal, () => undefined);
    for (let i = 0; i < 100 && !held.has("hold-1"); i++) await new Promise((r) => setTimeout(r, 10));
    dispatcher.forget("s-3");
    expect(await subscriptionsOfDispatcher()).toContain("fleet.tool.result.s-3.*");
    held.get("hold-1")?.();
    expect((await waiting).content).toEqual([{ type: "text", text: "echo hold-1" }]);
    await nc.flush();
    expect(await subscriptionsOfDispatcher()).not.toContain("fleet.tool.result.s-3.*");
    dispatcher.forget("s-1");
    await nc.flush();
    expect(await subscriptionsOfDispatcher()).not.toContain("fleet.tool.result.s-1.*");
  });

  it("a detached worker stops waiting and never cancels the call, not even when its timers are due", async () => {
    // A dispatcher whose pickup timer (300 ms) and call timer would fire soon after the detach.
    const quick = createToolDispatcher({ nc, publisher, jsm, now: Date.now, pickupTimeoutMs: 300, cancelGraceMs: 100 });
    const cancels: string[] = [];
    const cancelSub = nc.subscribe("fleet.tool.cancel.s-4.*", {
      callback: (_e, m) => {
        cancels.push(m.subject);
      },
    });
    await nc.flush();
    const detach = new AbortController();
    const run = new AbortController();
    const waiting = quick.execute(
      { ...call("s-4", "hold-2", true), timeoutMs: 400 },
      run.signal,
      () => undefined,
      detach.signal,
    );
    for (let i = 0; i < 100 && !held.has("hold-2"); i++) await new Promise((r) => setTimeout(r, 10));
    detach.abort();
    run.abort(); // the engine aborts its run on a detach: that must not cancel the call either
    const left = await waiting;
    expect(left).toMatchObject({
      isError: true,
      content: [{ type: "text", text: "Tool call left to the session's next owner" }],
    });
    await new Promise((r) => setTimeout(r, 900)); // past the pickup and the call timers
    await nc.flush();
    expect(cancels).toEqual([]);
    // The control: without a detach, the same run abort publishes a cancel.
    const cancelled = quick.execute(
      { ...call("s-4", "hold-3", true), timeoutMs: 5_000 },
      AbortSignal.abort(),
      () => undefined,
    );
    expect((await cancelled).isError).toBe(true);
    const live = new AbortController();
    const pending = quick.execute({ ...call("s-4", "hold-4", true), timeoutMs: 5_000 }, live.signal, () => undefined);
    for (let i = 0; i < 100 && !held.has("hold-4"); i++) await new Promise((r) => setTimeout(r, 10));
    live.abort();
    await pending;
    await nc.flush();
    expect(cancels).toEqual([subjects.toolCancel("s-4", "hold-4")]);
    cancelSub.unsubscribe();
    quick.close();
  });

  it("finds a result that was stored while its connection moved (the published record never reached it)", async () => {
    const other = await connectNats({ url: server.url, name: "dispatcher-test-runner" });
    try {
      let updates = 0;
      const waiting = dispatcher.execute({ ...call("s-lost", "hold-lost", true), timeoutMs: 60_000 }, signal, () => {
        updates++;
      });
      for (let i = 0; i < 100 && !held.has("hold-lost"); i++) await new Promise((r) => setTimeout(r, 20));
      expect(held.has("hold-lost")).toBe(true);
      // The runner reports progress: the call is picked up, so only its final timer would read the store.
      await record("s-lost", "hold-lost", { kind: "update", partialResult: { content: [], details: {} } } as never);
      for (let i = 0; i < 100 && updates === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(updates).toBe(1);
      // The dispatcher's connection drops and comes back; the result is stored meanwhile.
      nc.reconnect();
      const encoded = encodeToolResultRecord(text("stored while away"));
      if (!encoded.ok) throw new Error(encoded.error);
      await jetstream(other).publish(subjects.toolResult("s-lost", "hold-lost"), encoded.bytes);
      const started = Date.now();
      const result = await waiting;
      expect(result.content).toEqual([{ type: "text", text: "stored while away" }]);
      expect(Date.now() - started).toBeLessThan(RESULT_RECHECK_MS + 2_000);
    } finally {
      await other.close();
    }
  }, 30_000);
});
