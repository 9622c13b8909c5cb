// Reads the gateway's SSE event stream with fetch (EventSource cannot send Authorization).
import { FleetEvent } from "@fleet/protocol";
import { authHeaders } from "./api.js";

export interface LoggedEvent {
  /** Stream sequence (the frame's `id`). */
  seq: number;
  event: FleetEvent;
}

export type StreamEnd = { ok: true; lastSeq: number } | { ok: false; status: number; message: string };

/**
 * Streams a session's events after `after`, calling `onBatch` with every chunk's complete frames.
 * `follow: false` ends at the log's end. Resolves when the stream ends or `signal` aborts.
 */
export async function streamEvents(
  sessionId: string,
  opts: { after: number; follow: boolean; signal: AbortSignal; onBatch(events: LoggedEvent[]): void },
): Promise<StreamEnd> {
  let lastSeq = opts.after;
  let res: Response;
  try {
    res = await fetch(
      `/v1/sessions/${encodeURIComponent(sessionId)}/events?after=${opts.after}&follow=${opts.follow}`,
      { headers: authHeaders(), signal: opts.signal },
    );
  } catch (err) {
    return opts.signal.aborted ? { ok: true, lastSeq } : { ok: false, status: 0, message: String(err) };
  }
  if (!res.ok || !res.body) {
    const text = await res.text();
    let message = text;
    try {
      message = (JSON.parse(text) as { error: { message: string } }).error.message;
    } catch {}
    return { ok: false, status: res.status, message };
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += value;
      const frames = buffer.split("\n\n");
      buffer = frames.pop() ?? "";
      const batch: LoggedEvent[] = [];
      for (const frame of frames) {
        const item = parseFrame(frame);
        if (item) {
          batch.push(item);
          lastSeq = item.seq;
        }
      }
      if (batch.length) opts.onBatch(batch);
    }
  } catch (err) {
    if (!opts.signal.aborted) return { ok: false, status: 0, message: String(err) };
  }
  return { ok: true, lastSeq };
}

/** One SSE frame → its event (comments and malformed frames → undefined). */
export function parseFrame(frame: string): LoggedEvent | undefined {
  let id: number | undefined;
  let data = "";
  for (const line of frame.split("\n")) {
    if (line.startsWith("id: ")) id = Number(line.slice(4));
    else if (line.startsWith("data: ")) data += line.slice(6);
  }
  if (id === undefined || !data) return undefined;
  const parsed = FleetEvent.safeParse(JSON.parse(data));
  return parsed.success ? { seq: id, event: parsed.data } : undefined;
}
