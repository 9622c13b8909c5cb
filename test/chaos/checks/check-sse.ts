// Invariant 6: an SSE client that reconnects with Last-Event-ID after every drop (through any gateway)
// receives the session's log exactly: every event once, in order, none missing.
import type { SessionLog, SseReceived, Violation } from "./types.js";

export function checkSse(log: SessionLog, received: readonly SseReceived[]): Violation[] {
  const out: Violation[] = [];
  const v = (kind: string, detail: string) => out.push({ invariant: "sse", sessionId: log.sessionId, kind, detail });
  for (let i = 1; i < received.length; i++) {
    const [prev, cur] = [received[i - 1] as SseReceived, received[i] as SseReceived];
    if (cur.seq <= prev.seq) v("sse_order", `frame ${i} has id ${cur.seq} after ${prev.seq} (${cur.type})`);
  }
  const seen = new Set<string>();
  for (const r of received) {
    if (seen.has(r.eventId)) v("sse_duplicate", `event ${r.eventId} (${r.type}, id ${r.seq}) received twice`);
    seen.add(r.eventId);
  }
  const expected = log.events.map((e) => e.meta.id);
  const missing = expected.filter((id) => !seen.has(id));
  if (missing.length > 0) {
    const at = expected.indexOf(missing[0] as string);
    v("sse_missing", `${missing.length} of ${expected.length} events never arrived, the first at index ${at}`);
  }
  const logged = new Set(expected);
  const foreign = received.filter((r) => !logged.has(r.eventId));
  if (foreign.length > 0) v("sse_foreign", `${foreign.length} received events are not in the log`);
  // With every event received once and nothing else, the order must be the log's.
  if (missing.length === 0 && foreign.length === 0 && out.length === 0) {
    const order = received.map((r) => r.eventId);
    const first = order.findIndex((id, i) => id !== expected[i]);
    if (first !== -1) v("sse_order", `frame ${first} is ${order[first]}, the log has ${expected[first]} there`);
  }
  return out;
}
