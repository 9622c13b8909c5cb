// Server-Sent Events framing (pure).
import type { FleetEvent } from "@fleet/protocol";

/**
 * One event as an SSE frame: `id:` the stream sequence, `event:` the event type, `data:` the event
 * JSON on one line (JSON.stringify never emits a raw newline).
 */
export const eventFrame = (seq: number, event: FleetEvent): string =>
  `id: ${seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

/** A comment line: ignored by EventSource, keeps proxies and idle timers from closing the stream. */
export const commentFrame = (text: string): string => `: ${text.replace(/[\r\n]+/g, " ")}\n\n`;

/**
 * Where a stream resumes: after `Last-Event-ID` (an EventSource reconnecting sends the last `id:` it
 * saw), else after `?after=`, else from the first event (0). An id that is not a non-negative
 * integer is malformed input.
 */
export function resumeAfter(lastEventId: string | undefined, after: number | undefined): number | "invalid" {
  if (lastEventId !== undefined && lastEventId.trim() !== "") {
    const trimmed = lastEventId.trim();
    if (!/^\d{1,15}$/.test(trimmed)) return "invalid";
    return Number(trimmed);
  }
  return after ?? 0;
}
