import {
  EventMeta,
  type FleetEvent,
  FleetEvent as FleetEventSchema,
  type FleetEventType,
  parseJson,
  validate,
} from "@fleet/protocol";
import { z } from "zod";

/**
 * Event types whose bodies no reader of the projection looks at: the tree reducer leaves the tree
 * unchanged for them and the status only needs `agent_start` / `agent_end`. Every other type
 * (including any type added later) is validated and kept in full. `event-decoder.test.ts` checks
 * the reducer against this list.
 */
export const BODY_IGNORED_TYPES: ReadonlySet<FleetEventType> = new Set<FleetEventType>([
  "turn_start",
  "message_start",
  "message_update",
  "tool_execution_start",
  "tool_execution_update",
  "tool_execution_end",
  "turn_end",
  "command_accepted",
  "command_rejected",
  "queue_update",
  "owner_change",
  "run_resumed",
  "tool_approval_requested",
  "tool_approval_resolved",
]);
const Envelope = z.object({ type: z.string(), meta: EventMeta });

export type DecodedEvent = { ok: true; event: FleetEvent } | { ok: false; error: string };

/**
 * Decodes an event for the projection. For the `BODY_IGNORED_TYPES` only `type` and `meta` are
 * validated and kept (the store needs `meta.ts`); everything else is validated in full. Unknown
 * types and invalid envelopes are errors.
 */
export function decodeForProjection(data: Uint8Array): DecodedEvent {
  const json = parseJson(data);
  if (!json.ok) return { ok: false, error: json.error };
  const type = (json.value as { type?: unknown } | null)?.type;
  if (typeof type === "string" && BODY_IGNORED_TYPES.has(type as FleetEventType)) {
    const envelope = validate(Envelope, json.value);
    if (!envelope.ok) return { ok: false, error: envelope.error };
    // Body dropped on purpose: no reader of the projection looks at it.
    return { ok: true, event: { type: envelope.value.type, meta: envelope.value.meta } as unknown as FleetEvent };
  }
  const full = validate(FleetEventSchema, json.value);
  return full.ok ? { ok: true, event: full.value } : { ok: false, error: full.error };
}
