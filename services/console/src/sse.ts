// Reads a session's events from the gateway: its history with fetch (the bearer header, frames
// parsed in large slices), then live with EventSource and a stream ticket (EventSource cannot send
// Authorization; the ticket stands in for it, for this session only).
import { FleetEvent } from "@fleet/protocol";
import { api, authHeaders, gatewayUrl } from "./api.js";

export interface LoggedEvent {
  /** Stream sequence (the frame's `id`). */
  seq: number;
  event: FleetEvent;
}

/** Characters of history text parsed at once. */
const HISTORY_SLICE = 256 * 1024;

export type StreamEnd = { ok: true; lastSeq: number } | { ok: false; status: number; message: string };

/**
 * Streams a session's events after `after`, calling `onBatch` with complete frames.
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
      gatewayUrl(`/v1/sessions/${encodeURIComponent(sessionId)}/events?after=${opts.after}&follow=${opts.follow}`),
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
  const deliver = (items: LoggedEvent[]) => {
    if (!items.length) return;
    lastSeq = (items[items.length - 1] as LoggedEvent).seq;
    opts.onBatch(items);
  };
  // History (`follow: false`) is parsed in slices of at least HISTORY_SLICE characters, so its
  // frames are folded while the rest arrives; live frames are parsed as soon as they arrive.
  const slice = opts.follow ? 0 : HISTORY_SLICE;
  try {
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (!done) buffer += value;
      if (done || buffer.length >= slice) {
        const parsed = parseFrames(buffer);
        buffer = parsed.rest;
        deliver(parsed.items);
      }
      if (done) break;
    }
  } catch (err) {
    if (!opts.signal.aborted) return { ok: false, status: 0, message: String(err) };
  }
  return { ok: true, lastSeq };
}

/**
 * Follows a session's events after `after` with EventSource: a stream ticket first (`POST
 * …/events/ticket`), then `new EventSource(<ticket url>&after=)`. The browser reconnects by itself
 * (with `Last-Event-ID`) while the ticket is valid; once the stream is closed for good (the ticket
 * expired, the gateway refused it) this resolves, and the caller follows again with a new ticket.
 */
export async function followEvents(
  sessionId: string,
  opts: { after: number; signal: AbortSignal; onBatch(events: LoggedEvent[]): void },
): Promise<StreamEnd> {
  const ticket = await api<{ url: string }>("POST", `/v1/sessions/${encodeURIComponent(sessionId)}/events/ticket`);
  if (!ticket.ok) return { ok: false, status: ticket.status, message: ticket.message };
  if (opts.signal.aborted) return { ok: true, lastSeq: opts.after };
  let lastSeq = opts.after;
  return new Promise<StreamEnd>((resolve) => {
    const source = new EventSource(gatewayUrl(`${ticket.body.url}&after=${opts.after}`));
    const onFrame = (e: MessageEvent<string>) => {
      const seq = Number(e.lastEventId);
      const event = eventOf(e.data);
      if (!event || !Number.isSafeInteger(seq) || seq <= lastSeq) return;
      lastSeq = seq;
      opts.onBatch([{ seq, event }]);
    };
    for (const type of EVENT_TYPES) source.addEventListener(type, onFrame as EventListener);
    const finish = () => {
      source.close();
      opts.signal.removeEventListener("abort", finish);
      resolve({ ok: true, lastSeq });
    };
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) finish();
    };
    opts.signal.addEventListener("abort", finish);
  });
}

/**
 * Every complete frame of `text` (frames end with a blank line), in one pass; `rest` is the
 * unfinished tail. Comments and malformed frames are skipped.
 */
export function parseFrames(text: string): { items: LoggedEvent[]; rest: string } {
  const items: LoggedEvent[] = [];
  let start = 0;
  for (;;) {
    const end = text.indexOf("\n\n", start);
    if (end < 0) break;
    const item = parseFrame(text, start, end);
    if (item) items.push(item);
    start = end + 2;
  }
  return { items, rest: text.slice(start) };
}

/** The frame in `text` from `start` to `end` (its blank line excluded) → its event. */
function parseFrame(text: string, start: number, end: number): LoggedEvent | undefined {
  let id: number | undefined;
  let data: string | undefined;
  for (let line = start; line < end; ) {
    const next = text.indexOf("\n", line);
    const stop = next < 0 || next > end ? end : next;
    if (text.startsWith("id: ", line)) id = Number(text.slice(line + 4, stop));
    else if (text.startsWith("data: ", line)) {
      const chunk = text.slice(line + 6, stop);
      data = data === undefined ? chunk : `${data}\n${chunk}`;
    }
    line = stop + 1;
  }
  if (id === undefined || !Number.isSafeInteger(id) || data === undefined) return undefined;
  const event = eventOf(data);
  return event ? { seq: id, event } : undefined;
}

const EVENT_TYPES: ReadonlySet<string> = new Set(FleetEvent.options.map((o) => o.shape.type.value));

/**
 * A frame's `data` → the event. The gateway decodes every event with the `FleetEvent` schema before
 * it frames it (services/gateway, routes/events.ts), so re-validating each one here would only repeat
 * that work (it was a third of a 10,000-event open). What the fold relies on is checked: a known
 * `type` and a `meta` with its `ts`. Contract: never throws.
 */
export function eventOf(data: string): FleetEvent | undefined {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { type, meta } = value as { type?: unknown; meta?: { ts?: unknown } | null };
  if (typeof type !== "string" || !EVENT_TYPES.has(type)) return undefined;
  if (typeof meta !== "object" || meta === null || typeof meta.ts !== "number") return undefined;
  return value as FleetEvent;
}
