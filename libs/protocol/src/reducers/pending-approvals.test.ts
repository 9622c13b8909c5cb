import { describe, expect, it } from "vitest";
import type { FleetEvent } from "../events.js";
import { foldPendingApprovals, type PendingApprovals } from "./pending-approvals.js";

const meta = (ts: number) => ({ v: 1 as const, id: `e${ts}`, sessionId: "s-1", ts, producer: "test" });
const requested = (toolCallId: string, ts: number): FleetEvent => ({
  type: "tool_approval_requested",
  toolCallId,
  toolName: "write",
  args: { path: "a" },
  meta: meta(ts),
});

const fold = (events: FleetEvent[]) =>
  events.reduce<PendingApprovals>((state, e, i) => foldPendingApprovals(state, i + 1, e), new Map());

describe("protocol / pending approvals", () => {
  it("adds requests and removes resolved or ended calls", () => {
    const state = fold([
      requested("t1", 10),
      requested("t2", 11),
      { type: "tool_approval_resolved", toolCallId: "t1", approved: true, meta: meta(12) },
    ]);
    expect([...state.values()]).toEqual([
      { sessionId: "s-1", toolCallId: "t2", toolName: "write", args: { path: "a" }, seq: 2, requestedAt: 11 },
    ]);
    const ended = foldPendingApprovals(state, 4, {
      type: "tool_execution_end",
      toolCallId: "t2",
      toolName: "write",
      result: { content: [], details: undefined },
      isError: true,
      meta: meta(13),
    } as FleetEvent);
    expect(ended.size).toBe(0);
  });

  it("clears everything at agent_end and keeps the same map for unrelated events", () => {
    const state = fold([requested("t1", 10)]);
    expect(foldPendingApprovals(state, 2, { type: "turn_start", meta: meta(11) })).toBe(state);
    expect(foldPendingApprovals(state, 3, { type: "agent_end", messages: [], meta: meta(12) }).size).toBe(0);
  });
});
