// A session's whole log as it stands, decoded (events that do not decode are skipped).
import { decodeEvent, type FleetEvent } from "@fleet/protocol";
import { readSubject } from "@fleet/runtime";
import { type ClientContext, eventStreamOf, eventSubjectOf, streamUnavailable } from "./client-context.js";

/** The session's events, in order. Errors: `unavailable` when the log cannot be read. */
export async function readSessionLog(ctx: ClientContext, sessionId: string): Promise<FleetEvent[]> {
  const events: FleetEvent[] = [];
  try {
    for await (const record of readSubject(
      ctx.js,
      ctx.jsm,
      eventStreamOf(ctx, sessionId),
      eventSubjectOf(ctx, sessionId),
    )) {
      const decoded = decodeEvent(record.data);
      if (decoded.ok) events.push(decoded.value);
    }
  } catch (err) {
    throw streamUnavailable(err);
  }
  return events;
}
