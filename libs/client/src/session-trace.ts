// `trace()`: a session's runs as OpenTelemetry spans, derived from its log as it stands.
import { deriveRunSpans, type TraceSpan } from "@fleet/protocol";
import type { ClientContext } from "./client-context.js";
import { readSessionLog } from "./session-log.js";

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
  const events = await readSessionLog(ctx, sessionId);
  return deriveRunSpans(events, opts.runId !== undefined ? { runId: opts.runId } : {});
}
