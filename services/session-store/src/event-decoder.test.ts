import {
  EventMeta,
  emptyUsage,
  type FleetEvent,
  FleetEvent as FleetEventSchema,
  type FleetEventType,
  foldPendingApprovals,
  foldSessionTreeEvents,
  PENDING_APPROVAL_EVENT_TYPES,
  type PendingApprovals,
} from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { BODY_IGNORED_TYPES, CALL_ID_ONLY_TYPES, decodeForProjection, plainMeta } from "./event-decoder.js";
import { emptyProjectedSession, projectEvents } from "./session-state.js";
import { syntheticEvents } from "./testing/synthetic-session.js";

const meta = { v: 1 as const, id: "x-1", sessionId: "s-1", ts: 99, producer: "p" };
const assistant = {
  role: "assistant" as const,
  content: [{ type: "text" as const, text: "hi" }],
  api: "a",
  provider: "p",
  model: "m",
  usage: emptyUsage(),
  stopReason: "stop" as const,
  timestamp: 1,
};
const toolResult = {
  role: "toolResult" as const,
  toolCallId: "c",
  toolName: "t",
  content: [],
  isError: false,
  timestamp: 1,
};
/** One valid event of every body-ignored type. */
const samples: Record<string, Omit<FleetEvent, "meta">> = {
  turn_start: { type: "turn_start" },
  message_start: { type: "message_start", message: assistant },
  message_update: { type: "message_update", deltas: [{ type: "text_delta", contentIndex: 0, delta: "x" }] },
  tool_execution_start: { type: "tool_execution_start", toolCallId: "c", toolName: "t", args: {} },
  tool_execution_update: { type: "tool_execution_update", toolCallId: "c", toolName: "t", args: {}, partialResult: 1 },
  turn_end: { type: "turn_end", message: assistant, toolResults: [toolResult] },
  command_accepted: { type: "command_accepted", commandId: "c", commandType: "prompt" },
  command_rejected: { type: "command_rejected", commandId: "c", commandType: "x", code: "invalid", reason: "r" },
  queue_update: { type: "queue_update", steer: [], followUp: [], nextTurn: [] },
  owner_change: { type: "owner_change", workerId: "w", partition: 0, epoch: 1 },
  run_resumed: { type: "run_resumed", runId: "r", reason: "crash" },
  approval_rules_set: { type: "approval_rules_set", rules: [{ tool: "bash", action: "ask" }] },
  hook_decision: {
    type: "hook_decision",
    hook: "on_payload",
    server: "audit",
    inputHash: "0".repeat(64),
    turn: 2,
    outputRef: { bucket: "fleet_blobs", name: "hooks/s/on_payload/audit/0", size: 70_000 },
  },
} as Record<string, Omit<FleetEvent, "meta">>;

describe("BODY_IGNORED_TYPES", () => {
  it("holds only types the tree reducer leaves unchanged (and neither agent_start nor agent_end)", () => {
    const tree = foldSessionTreeEvents(syntheticEvents({ sessionId: "s-1", seed: 2, runs: 4 }));
    expect(Object.keys(samples).sort()).toEqual([...BODY_IGNORED_TYPES].sort());
    for (const type of BODY_IGNORED_TYPES) {
      const event = FleetEventSchema.parse({ ...samples[type], meta });
      expect(foldSessionTreeEvents([event], tree)).toBe(tree);
      expect(["agent_start", "agent_end"]).not.toContain(type);
      expect(PENDING_APPROVAL_EVENT_TYPES as readonly string[]).not.toContain(type);
    }
  });

  it("keeps what the approvals fold reads: a decoded log folds to the same pending approvals", () => {
    const events: FleetEvent[] = [
      { type: "tool_approval_requested", toolCallId: "c1", toolName: "t", args: { a: 1 }, meta },
      { type: "tool_approval_requested", toolCallId: "c2", toolName: "t", args: {}, meta },
      { type: "tool_approval_requested", toolCallId: "c3", toolName: "t", args: {}, meta },
      { type: "tool_approval_resolved", toolCallId: "c1", approved: true, meta },
      {
        type: "tool_execution_end",
        toolCallId: "c2",
        toolName: "t",
        result: { content: [{ type: "text", text: "big" }] },
        isError: false,
        meta,
      },
    ];
    const fold = (evs: FleetEvent[]) =>
      evs.reduce<PendingApprovals>((state, e, i) => foldPendingApprovals(state, i + 1, e), new Map());
    const decoded = events.map((e) => {
      const d = decodeForProjection(new TextEncoder().encode(JSON.stringify(e)));
      if (!d.ok) throw new Error(d.error);
      return d.event;
    });
    expect([...fold(decoded).keys()]).toEqual(["c3"]);
    expect(fold(decoded)).toEqual(fold(events));
    expect(CALL_ID_ONLY_TYPES.has("tool_execution_end")).toBe(true);
  });

  it("leaves every other type, e.g. config_change, to full validation", () => {
    const all = FleetEventSchema.options.map((o) => o.shape.type.value as FleetEventType);
    expect(all.filter((t) => !BODY_IGNORED_TYPES.has(t))).toContain("config_change");
    const change = { type: "config_change", systemPrompt: "new", meta };
    const decoded = decodeForProjection(new TextEncoder().encode(JSON.stringify(change)));
    expect(decoded).toEqual({ ok: true, event: change });
    const created = syntheticEvents({ sessionId: "s-1", seed: 2, runs: 1 });
    const s = projectEvents(
      emptyProjectedSession("s-1"),
      [...created, change as FleetEvent].map((event, i) => ({ seq: i + 1, event })),
    );
    expect(s.tree.config?.systemPrompt).toBe("new");
  });
});

describe("plainMeta", () => {
  const cases: unknown[] = [
    meta,
    { ...meta, runId: "r-1", extra: "dropped" },
    { ...meta, v: 2 },
    { ...meta, id: "" },
    { ...meta, id: "x".repeat(129) },
    { ...meta, sessionId: "bad id" },
    { ...meta, sessionId: "s".repeat(129) },
    { ...meta, ts: -1 },
    { ...meta, ts: 1.5 },
    { ...meta, ts: 2 ** 53 },
    { ...meta, ts: "1" },
    { ...meta, producer: "" },
    { ...meta, runId: "" },
    { ...meta, runId: 5 },
    { ...meta, runId: undefined },
    [meta],
    null,
    "meta",
  ];

  it("accepts exactly what EventMeta accepts, with the same stripped value", () => {
    for (const c of cases) {
      const parsed = EventMeta.safeParse(c);
      expect(plainMeta(c)).toEqual(parsed.success ? parsed.data : null);
    }
    expect(cases.filter((c) => plainMeta(c) !== null)).toHaveLength(3);
  });

  it("still rejects a body-ignored event with a malformed meta, with the schema's error", () => {
    const bad = { type: "message_update", deltas: [], meta: { ...meta, ts: -1 } };
    const decoded = decodeForProjection(new TextEncoder().encode(JSON.stringify(bad)));
    expect(decoded.ok).toBe(false);
    expect(decoded.ok ? "" : decoded.error).toContain("meta.ts");
  });
});
