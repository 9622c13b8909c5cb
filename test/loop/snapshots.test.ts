// Snapshots of session folds (PROTOCOL change 42) on a real nats-server: a session recorded by a
// real loop worker (queues, an approval, a compaction, a branch, an archive and a restore) folds
// to the same state from any cut's snapshot as from its first event; a load uses the snapshot the
// worker wrote, and a corrupt or stale one falls back to the whole log; a deletion removes it.
import {
  createScriptedProvider,
  createSnapshotMetrics,
  createSnapshotStore,
  loadSession,
  type ScriptRequest,
  type ScriptStep,
  type SnapshotSettings,
} from "@fleet/loop";
import {
  decodeEvent,
  decodeSessionFold,
  encodeSessionFold,
  type FleetEvent,
  foldSessionEvents,
  KV_BUCKETS,
  partitionOf,
  type SessionState,
  STREAMS,
  subjects,
} from "@fleet/protocol";
import { createLogger, readSubject, sleep as realSleep } from "@fleet/runtime";
import { defineTool } from "@fleet/tools";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type commander, startLoopStack } from "../support/loop-harness.js";

const EVERY = 5;
let stack: Awaited<ReturnType<typeof startLoopStack>>;
let cmd: ReturnType<typeof commander>;
let kv: KV;
let settings: SnapshotSettings;
const logger = createLogger("snapshots-test", { level: process.env.LOG_LEVEL ?? "silent" });

const slow = defineTool({
  name: "slow",
  description: "waits ms milliseconds, then echoes its tag",
  parameters: z.object({ tag: z.string(), ms: z.number().int().nonnegative() }),
  async execute(args) {
    await new Promise((resolve) => setTimeout(resolve, args.ms));
    return { content: [{ type: "text", text: `done ${args.tag}` }] };
  },
});
const danger = defineTool({
  name: "danger",
  description: "needs a person's approval",
  parameters: z.object({ what: z.string() }),
  async execute(args) {
    return { content: [{ type: "text", text: `did ${args.what}` }] };
  },
});

beforeAll(async () => {
  stack = await startLoopStack({
    tools: [slow, danger],
    // Sessions idle for 1.5 s are let go (and loaded again from their snapshot on their next command).
    worker: {
      approvalTools: ["danger"],
      snapshotEvery: EVERY,
      sessionIdleMs: 1_500,
      lifecycle: { storeAbsentMs: 300 },
    },
  });
  cmd = stack.cmd;
  kv = await new Kvm(stack.nc).open(KV_BUCKETS.snapshots.name);
  settings = {
    store: createSnapshotStore(kv, await jetstreamManager(stack.nc)),
    every: EVERY,
    metrics: createSnapshotMetrics(new Registry()),
  };
});
afterAll(async () => {
  await stack?.stop();
});

const BIG = "lorem ipsum ".repeat(3_000);
/** A scripted answer (not a function of the request). */
type Reply = Exclude<ScriptStep, (...args: never[]) => unknown>;
/** Answers `plan` in order (then long texts); summarisation requests get a summary. */
function script(plan: Reply[]) {
  stack.scripted.use(
    createScriptedProvider({
      steps: Array.from(
        { length: 80 },
        () =>
          (req: ScriptRequest): Reply =>
            req.context.systemPrompt.includes("summarization assistant")
              ? { text: `SUMMARY of ${req.context.messages.length} message(s)` }
              : (plan.shift() ?? { text: BIG }),
      ),
      now: () => 5_000,
      sleep: realSleep,
      chunkChars: 512,
    }).streamFn,
  );
}
const call = (id: string, name: string, args: Record<string, unknown>) => ({
  content: [{ type: "toolCall" as const, id, name, arguments: args }],
});
const agentEnds = (n: number) => (ev: FleetEvent[]) => ev.filter((e) => e.type === "agent_end").length >= n;
const has = (type: string) => (ev: FleetEvent[]) => ev.some((e) => e.type === type);

async function load(sessionId: string, snapshots?: SnapshotSettings) {
  const { js, jsm } = { js: jetstream(stack.nc), jsm: await jetstreamManager(stack.nc) };
  return loadSession({ js, jsm, sessionId, partition: partitionOf(sessionId, 16), snapshots, logger });
}

/** The stored events of a session, decoded, with their sequences. */
async function logOf(sessionId: string): Promise<FleetEvent[]> {
  const js = jetstream(stack.nc);
  const jsm = await jetstreamManager(stack.nc);
  const out: FleetEvent[] = [];
  const subject = subjects.event(partitionOf(sessionId, 16), sessionId);
  for await (const rec of readSubject(js, jsm, STREAMS.events.name, subject)) {
    const decoded = decodeEvent(rec.data);
    if (!decoded.ok) throw new Error(decoded.error);
    out.push(decoded.value);
  }
  return out;
}

async function storedSnapshot(sessionId: string, minEvents = 0) {
  await expect
    .poll(async () => {
      const read = await settings.store.read(sessionId);
      return read.kind === "found" && read.snapshot.state.events >= minEvents;
    })
    .toBe(true);
}

const roundTrip = (state: SessionState) => {
  const decoded = decodeSessionFold(JSON.parse(JSON.stringify(encodeSessionFold(state))));
  if (!decoded.ok) throw new Error(decoded.error);
  return decoded.value;
};

/** At every cut, the fold rebuilt from its encoding equals the fold and folds the rest to the same state. */
function expectEveryCutFoldsOn(events: FleetEvent[]) {
  const whole = foldSessionEvents(events);
  for (let cut = 0; cut <= events.length; cut++) {
    const prefix = foldSessionEvents(events.slice(0, cut));
    const restored = roundTrip(prefix);
    expect(restored, `cut ${cut}`).toStrictEqual(prefix);
    expect(foldSessionEvents(events.slice(cut), restored), `cut ${cut}`).toStrictEqual(whole);
  }
}

describe("session snapshots", () => {
  const sid = "snap-1";

  it("records a session with queues, an approval, a compaction and a branch; every cut folds on to the same state", async () => {
    script([
      { text: BIG },
      call("q1", "slow", { tag: "a", ms: 600 }),
      { text: "after steer" },
      { text: "after follow-up" },
      call("ap1", "danger", { what: "deploy" }),
      { text: "approved and done" },
    ]);
    await cmd.send(sid, { type: "prompt", text: "first" });
    await cmd.waitFor(sid, agentEnds(1));
    await cmd.send(sid, { type: "prompt", text: "use the tool" });
    await cmd.waitFor(sid, has("tool_execution_start"));
    await cmd.send(sid, { type: "follow_up", text: "F1" });
    await cmd.send(sid, { type: "steer", text: "S1" });
    await cmd.waitFor(sid, agentEnds(2));
    await cmd.send(sid, { type: "prompt", text: "deploy it" });
    await cmd.waitFor(sid, has("tool_approval_requested"));
    await cmd.send(sid, { type: "approve_tool_call", toolCallId: "ap1" });
    await cmd.waitFor(sid, agentEnds(3));
    for (let n = 4; n <= 6; n++) {
      await cmd.send(sid, { type: "prompt", text: `more ${n}` });
      await cmd.waitFor(sid, agentEnds(n), 20_000);
    }
    await cmd.send(sid, { type: "compact", instructions: "keep the questions" });
    let events = await cmd.waitFor(sid, has("compaction_end"), 20_000);
    expect(events.filter((e) => e.type === "command_rejected")).toEqual([]);
    const firstUser = events.find((e) => e.type === "message_end" && e.message.role === "user");
    await cmd.send(sid, { type: "navigate", targetId: firstUser?.meta.id ?? "" });
    await cmd.send(sid, { type: "prompt", text: "a branch" });
    await cmd.waitFor(sid, agentEnds(7), 20_000);
    await cmd.send(sid, { type: "set_name", name: "snapshotted" });
    events = await cmd.waitFor(sid, has("session_info"));

    const types = new Set(events.map((e) => e.type));
    for (const t of [
      "queue_update",
      "tool_approval_resolved",
      "compaction",
      "leaf",
      "session_info",
      "message_update",
    ]) {
      expect(types, t).toContain(t);
    }
    expectEveryCutFoldsOn(events);
  });

  it("a load starts from the snapshot the worker wrote and folds only the events after it", async () => {
    const total = (await logOf(sid)).length;
    await storedSnapshot(sid, total - EVERY);
    const full = await load(sid);
    const fast = await load(sid, settings);
    expect(full.from).toBe("log");
    expect(full.read).toBe(total);
    expect(fast.from).toBe("snapshot");
    expect(fast.read).toBeLessThan(EVERY + 1);
    expect(fast.lastSeq).toBe(full.lastSeq);
    expect(fast.state).toStrictEqual(full.state);
    expect(fast.marks).toStrictEqual(full.marks);
  });

  it("a corrupt, stale or misplaced snapshot is refused: the load folds the whole log and drops it", async () => {
    // Let go while idle first: no writer of the session may store a good snapshot meanwhile.
    await expect.poll(() => stack.worker.sessions().includes(sid), { timeout: 15_000 }).toBe(false);
    const full = await load(sid);
    const head = await kv.get(sid);
    const original = head?.value ?? new Uint8Array();
    const newline = original.indexOf(0x0a);

    const corrupt = original.slice();
    corrupt[newline + 20] = (corrupt[newline + 20] as number) ^ 0x01;
    await kv.put(sid, corrupt);
    const fromCorrupt = await load(sid, settings);
    expect(fromCorrupt.from).toBe("log");
    expect(fromCorrupt.state).toStrictEqual(full.state);
    expect(await settings.metrics.rejected.get()).toMatchObject({
      values: [expect.objectContaining({ labels: { reason: "corrupt" }, value: 1 })],
    });
    await expect.poll(async () => (await settings.store.read(sid)).kind).toBe("none");

    // The header line is JSON; the body after it is gzip: only the header is edited.
    const text = new TextDecoder().decode(original.subarray(0, newline));
    const withHeader = (line: string) => {
      const head = new TextEncoder().encode(line);
      const out = new Uint8Array(head.byteLength + original.byteLength - newline);
      out.set(head, 0);
      out.set(original.subarray(newline), head.byteLength);
      return out;
    };
    for (const [reason, changed] of [
      ["stale_version", text.replace(/"fold":\d+/, '"fold":999')],
      ["not_in_log", text.replace(/"msgId":"[^"]*"/, '"msgId":"someone-else"')],
    ] as const) {
      expect(changed).not.toBe(text);
      await kv.put(sid, withHeader(changed));
      const loaded = await load(sid, settings);
      expect(loaded.from, reason).toBe("log");
      expect(loaded.state).toStrictEqual(full.state);
      const counted = (await settings.metrics.rejected.get()).values.find((v) => v.labels.reason === reason);
      expect(counted?.value, reason).toBe(1);
    }
  });

  it("archive removes the snapshot with the log; the restored session is snapshotted again and loads the same", async () => {
    // The worker writes a snapshot again once EVERY more events are folded.
    await cmd.send(sid, { type: "label", targetId: (await logOf(sid))[0]?.meta.id ?? "", label: "start" });
    for (const name of ["again", "and again"]) await cmd.send(sid, { type: "set_name", name });
    await cmd.waitFor(sid, (ev) => ev.some((e) => e.type === "session_info" && e.name === "and again"));
    await storedSnapshot(sid);
    const before = await load(sid);
    await cmd.send(sid, { type: "archive_session", by: "test" });
    await expect.poll(async () => (await logOf(sid)).length, { timeout: 30_000 }).toBe(0);
    expect((await settings.store.read(sid)).kind).toBe("none");
    expect(await kv.get(`${sid}.1`)).toBeNull();

    await cmd.send(sid, { type: "restore_session", by: "test" });
    await cmd.waitFor(sid, has("session_restored"), 30_000);
    await storedSnapshot(sid, before.state.events);
    const full = await load(sid);
    const fast = await load(sid, settings);
    expect(fast.from).toBe("snapshot");
    expect(fast.state).toStrictEqual(full.state);
    expect(fast.marks).toStrictEqual(full.marks);
    expect(full.state.tree).toStrictEqual(before.state.tree);
    // The restored log, lifecycle events included, at every cut.
    const restoredLog = await logOf(sid);
    expect(restoredLog.map((e) => e.type)).toEqual(expect.arrayContaining(["session_restoring", "session_restored"]));
    expectEveryCutFoldsOn(restoredLog);
  });

  it("an idle session is let go with a snapshot at its last event: its next load reads no event", async () => {
    const idle = "snap-3";
    script([{ text: "short" }]);
    await cmd.send(idle, { type: "prompt", text: "hello" });
    const events = await cmd.waitFor(idle, agentEnds(1));
    expect(events.length % EVERY).not.toBe(0); // the last events are past the last periodic snapshot
    await expect.poll(() => stack.worker.sessions().includes(idle), { timeout: 15_000 }).toBe(false);
    const loaded = await load(idle, settings);
    expect(loaded.from).toBe("snapshot");
    expect(loaded.read).toBe(0);
    expect(loaded.state).toStrictEqual((await load(idle)).state);
  });

  it("a load with a run open reads the log from that run's acceptance, not from the session's first event", async () => {
    const open = "snap-4";
    script([
      { text: "first answer" },
      { text: "second answer" },
      call("s4", "slow", { tag: "b", ms: 10 }),
      call("ap4", "danger", { what: "ship" }),
      { text: "shipped" },
    ]);
    for (let n = 1; n <= 2; n++) {
      await cmd.send(open, { type: "prompt", text: `earlier ${n}` });
      await cmd.waitFor(open, agentEnds(n));
    }
    await cmd.send(open, { type: "prompt", text: "ship it" });
    const events = await cmd.waitFor(open, has("tool_approval_requested"));
    const accepted = events.findLast((e) => e.type === "command_accepted" && e.commandType === "prompt");
    const started = events.findLastIndex((e) => e.type === "agent_start");
    expect(events.length - started).toBeGreaterThan(2 * EVERY);
    // A snapshot made inside the open run, after its start.
    await storedSnapshot(open, events.length - EVERY);
    const stored = await settings.store.read(open);
    expect(stored.kind === "found" && stored.snapshot.state.status.runId).toBeTruthy();

    const full = await load(open);
    const fast = await load(open, settings);
    expect(fast.from).toBe("snapshot");
    expect(fast.state).toStrictEqual(full.state);
    expect(fast.traceCursor).toStrictEqual(full.traceCursor);
    expect(fast.traceCursor.run?.root.runId).toBe(fast.state.status.runId);
    // From the open run's acceptance on, and nothing of the two runs before it.
    expect(fast.events[0]).toStrictEqual(accepted);
    expect(fast.events.some((e) => e.type === "agent_end")).toBe(false);
    expect(fast.events).toStrictEqual(full.events.slice(full.events.length - fast.events.length));
    expect(fast.events.length).toBeLessThan(full.events.length - 10);

    await cmd.send(open, { type: "approve_tool_call", toolCallId: "ap4" });
    await cmd.waitFor(open, agentEnds(3));
  });

  it("delete_session removes the session's snapshot", async () => {
    const other = "snap-2";
    script([{ text: "short" }]);
    await cmd.send(other, { type: "prompt", text: "hello" });
    await cmd.waitFor(other, agentEnds(1));
    await storedSnapshot(other);
    await cmd.send(other, { type: "delete_session", by: "test" });
    await expect.poll(async () => (await logOf(other)).length, { timeout: 30_000 }).toBe(0);
    expect((await settings.store.read(other)).kind).toBe("none");
    expect(await kv.get(other)).toBeNull();
  });
});
