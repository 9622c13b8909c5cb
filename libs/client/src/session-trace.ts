// `trace()`: a session's runs as OpenTelemetry spans, derived from its log as it stands.
import { decodeEvent, deriveRunSpans, type FleetEvent, type TraceSpan } from "@fleet/protocol";
import { readSubject } from "@fleet/runtime";
import { type ClientContext, eventStreamOf, eventSubjectOf, streamUnavailable } from "./client-context.js";

/**
 * The spans of the session's runs (PROTOCOL change 46) with `deriveRunSpans`; `runId` keeps one run.
 * Spans of a run still going are `open`; the same log gives the same spans and ids.
 * Errors: `unavailable` when the log cannot be read.
 */
export async function readSessionTrace(
  ctx: ClientContext,
  sessionId: string,
  opts: { runId?: string },
): Promise<TraceSpan[]> {
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
  return deriveRunSpans(events, opts.runId !== undefined ? { runId: opts.runId } : {});
}
