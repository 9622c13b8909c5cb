import { z } from "zod";

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/), version 00: `00-<trace-id>-<parent-id>-<flags>`,
 * lower-case hex, neither id all zeros. Anything else is not a traceparent.
 */
export const TRACEPARENT_PATTERN = /^00-(?!0{32})([0-9a-f]{32})-(?!0{16})([0-9a-f]{16})-([0-9a-f]{2})$/;

export const Traceparent = z.string().regex(TRACEPARENT_PATTERN, "a W3C traceparent: 00-<32 hex>-<16 hex>-<2 hex>");
/** W3C `tracestate`: vendor entries, passed on as they are (at most 512 characters, as the spec advises). */
export const Tracestate = z.string().max(512);

/**
 * The trace context a command carries (optional `traceparent` and `tracestate` on every command), and
 * that the loop records on its `command_accepted` (`trace`), so that whatever is derived from the log
 * joins the caller's trace.
 */
export const TraceContext = z.object({ traceparent: Traceparent, tracestate: Tracestate.optional() });
export type TraceContext = z.infer<typeof TraceContext>;

/** A parsed traceparent. `flags` bit 0 is "sampled". */
export interface SpanContextIds {
  traceId: string;
  spanId: string;
  flags: number;
}

/** The ids of a traceparent, or undefined when it is not one (W3C: an invalid header is ignored). */
export function parseTraceparent(value: string | undefined): SpanContextIds | undefined {
  const m = value === undefined ? null : TRACEPARENT_PATTERN.exec(value.trim().toLowerCase());
  if (!m) return undefined;
  return { traceId: m[1]!, spanId: m[2]!, flags: Number.parseInt(m[3]!, 16) };
}

export function formatTraceparent(ids: SpanContextIds): string {
  return `00-${ids.traceId}-${ids.spanId}-${(ids.flags & 0xff).toString(16).padStart(2, "0")}`;
}

/**
 * The command fields for a trace context received at an edge (an HTTP header, an SDK option): an
 * invalid traceparent is dropped (and its tracestate with it), as W3C asks of a receiver.
 */
export function traceFieldsOf(
  traceparent: string | undefined,
  tracestate: string | undefined,
): { traceparent?: string; tracestate?: string } {
  const ids = parseTraceparent(traceparent);
  if (!ids) return {};
  const state = tracestate?.trim();
  return {
    traceparent: formatTraceparent(ids),
    ...(state && state.length <= 512 ? { tracestate: state } : {}),
  };
}
