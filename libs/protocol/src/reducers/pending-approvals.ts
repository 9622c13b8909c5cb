// Pending tool approvals of one session as a fold of its events (pure): the gateway's `GET /v1/approvals`
// and the session store's approvals index (PROTOCOL change 44) answer with this fold.

import { z } from "zod";
import type { FleetEvent } from "../events.js";

export const PendingApproval = z.object({
  sessionId: z.string(),
  toolCallId: z.string(),
  toolName: z.string(),
  args: z.unknown(),
  /** Stream sequence of the `tool_approval_requested` event. */
  seq: z.number().int().positive(),
  /** `meta.ts` of that event (ms). */
  requestedAt: z.number().int().nonnegative(),
});
export type PendingApproval = z.infer<typeof PendingApproval>;

/** Requested and not yet resolved, ended or abandoned with the run: keyed by tool call id. */
export type PendingApprovals = ReadonlyMap<string, PendingApproval>;

/** The event types `foldPendingApprovals` looks at (every other type leaves the map unchanged). */
export const PENDING_APPROVAL_EVENT_TYPES = [
  "tool_approval_requested",
  "tool_approval_resolved",
  "tool_execution_end",
  "agent_end",
] as const;

/**
 * Applies one event. A request adds; `tool_approval_resolved` and `tool_execution_end` of the call
 * remove; `agent_end` clears (the run is over). Returns the same map when nothing changes.
 */
export function foldPendingApprovals(state: PendingApprovals, seq: number, event: FleetEvent): PendingApprovals {
  switch (event.type) {
    case "tool_approval_requested": {
      const next = new Map(state);
      next.set(event.toolCallId, {
        sessionId: event.meta.sessionId,
        toolCallId: event.toolCallId,
        toolName: event.toolName,
        args: event.args,
        seq,
        requestedAt: event.meta.ts,
      });
      return next;
    }
    case "tool_approval_resolved":
    case "tool_execution_end": {
      if (!state.has(event.toolCallId)) return state;
      const next = new Map(state);
      next.delete(event.toolCallId);
      return next;
    }
    case "agent_end":
      return state.size === 0 ? state : new Map();
    default:
      return state;
  }
}
