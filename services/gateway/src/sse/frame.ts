// Server-Sent Events framing (pure).
import type { FleetEvent } from "@fleet/protocol";

/**
 * SSE frames as bytes, encoded once for every client that gets them: `bytes` is the frames as
 * they are, `chunk` the same bytes as one HTTP/1.1 chunk (`<size in hex>\r\n<bytes>\r\n`), which is
 * what a chunked response writes. `bytes` is a view into `chunk`; neither is ever modified.
 */
export interface EncodedFrame {
  readonly bytes: Buffer;
  readonly chunk: Buffer;
}

/** Encodes the concatenation of `parts` (strings as UTF-8) once, as bytes and as one chunk. */
export function encodeFrame(parts: ReadonlyArray<string | Uint8Array>): EncodedFrame {
  const buffers = parts.map((p) => (typeof p === "string" ? Buffer.from(p) : p));
  let size = 0;
  for (const b of buffers) size += b.byteLength;
  const prefix = `${size.toString(16)}\r\n`;
  const chunk = Buffer.allocUnsafe(prefix.length + size + 2);
  let at = chunk.write(prefix, 0, "latin1");
  for (const b of buffers) {
    chunk.set(b, at);
    at += b.byteLength;
  }
  chunk.write("\r\n", at, "latin1");
  return { bytes: chunk.subarray(prefix.length, prefix.length + size), chunk };
}

/**
 * One event as the parts of an SSE frame: `id:` the stream sequence, `event:` the event type,
 * `data:` the event JSON on one line. `json` is the JSON the event was decoded from, used as it is
 * when it starts with `{` and is on one line (JSON.stringify never emits a raw newline, and inside
 * a JSON string a newline is always escaped); other JSON (line breaks or a byte order mark
 * between tokens) gives `event` serialised again.
 */
export function eventFrameParts(seq: number, event: FleetEvent, json: Uint8Array): Array<string | Uint8Array> {
  const view = Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  const asIs = view[0] === 0x7b && view.indexOf(0x0a) === -1 && view.indexOf(0x0d) === -1;
  return [`id: ${seq}\nevent: ${event.type}\ndata: `, asIs ? view : JSON.stringify(event), "\n\n"];
}

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
