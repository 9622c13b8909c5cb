import {
  EventMeta,
  type FleetEvent,
  FleetEvent as FleetEventSchema,
  type FleetEventType,
  parseJson,
  SESSION_ID_PATTERN,
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
  "turn_end",
  "command_accepted",
  "command_rejected",
  "queue_update",
  "owner_change",
  "run_resumed",
  "approval_rules_set",
  "hook_decision",
]);
/**
 * Event types of which only `type`, `meta` and `toolCallId` are kept (the approvals index needs the
 * call id; the body, a tool's whole result, is not read). `tool_approval_requested` and
 * `tool_approval_resolved` are validated in full.
 */
export const CALL_ID_ONLY_TYPES: ReadonlySet<FleetEventType> = new Set<FleetEventType>(["tool_execution_end"]);
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
  if (typeof type === "string" && CALL_ID_ONLY_TYPES.has(type as FleetEventType)) {
    const { meta, toolCallId } = json.value as { meta?: unknown; toolCallId?: unknown };
    const plain = plainMeta(meta);
    if (plain && typeof toolCallId === "string" && toolCallId.length > 0) {
      return { ok: true, event: { type, meta: plain, toolCallId } as unknown as FleetEvent };
    }
  } else if (typeof type === "string" && BODY_IGNORED_TYPES.has(type as FleetEventType)) {
    // Body dropped on purpose: no reader of the projection looks at it.
    const meta = plainMeta((json.value as { meta?: unknown }).meta);
    if (meta) return { ok: true, event: { type, meta } as unknown as FleetEvent };
    const envelope = validate(Envelope, json.value);
    if (!envelope.ok) return { ok: false, error: envelope.error };
    return { ok: true, event: { type: envelope.value.type, meta: envelope.value.meta } as unknown as FleetEvent };
  }
  const full = validate(FleetEventSchema, json.value);
  return full.ok ? { ok: true, event: full.value } : { ok: false, error: full.error };
}

const isEventId = (x: unknown): x is string => typeof x === "string" && x.length >= 1 && x.length <= 128;

/**
 * The hot path of `EventMeta` validation (most events are body-ignored deltas): accepts exactly what
 * the schema accepts and returns the same stripped copy, or null for anything the schema must judge
 * (then `validate` produces the error). `event-decoder.test.ts` checks both agree.
 */
export function plainMeta(m: unknown): EventMeta | null {
  if (typeof m !== "object" || m === null || Array.isArray(m)) return null;
  const { v, id, sessionId, ts, runId, producer } = m as Record<string, unknown>;
  if (v !== 1 || !isEventId(id) || typeof sessionId !== "string" || !SESSION_ID_PATTERN.test(sessionId)) return null;
  if (typeof ts !== "number" || !Number.isSafeInteger(ts) || ts < 0) return null;
  if (typeof producer !== "string" || producer.length < 1) return null;
  if (runId === undefined) return { v, id, sessionId, ts, producer };
  return isEventId(runId) ? { v, id, sessionId, ts, runId, producer } : null;
}
