// What the store reads off a delivered FLEET_EVENTS message without nats.js decoding all of it: the
// stream sequence and the consumer's pending count (reply subject) and the previous subject sequence
// (`Nats-Expected-Last-Subject-Sequence` header). Each falls back to the client's own parsing.
import type { JsMsg } from "@nats-io/jetstream";
import type { EventRecord } from "./projector.js";

const PREV_SEQ_HEADER = "Nats-Expected-Last-Subject-Sequence";
const PREV_SEQ_LINE = Buffer.from(`\r\n${PREV_SEQ_HEADER}:`, "latin1");

/** The raw header block of a message as nats.js 3 keeps it, or undefined if its internals differ. */
function rawHeaderBlock(m: JsMsg): Buffer | undefined {
  const inner = (m as unknown as { msg?: { _rdata?: unknown; _msg?: { hdr?: unknown } } }).msg;
  const data = inner?._rdata;
  const hdr = inner?._msg?.hdr;
  if (!(data instanceof Uint8Array) || typeof hdr !== "number" || hdr < 0 || hdr > data.byteLength) return undefined;
  return Buffer.from(data.buffer, data.byteOffset, hdr);
}

/**
 * `Nats-Expected-Last-Subject-Sequence` as a number. Read straight from the raw header block when
 * the header is there in its canonical spelling (as every NATS client sends it): nats.js would
 * otherwise decode every header of every message. Anything else goes through `m.headers`.
 */
export function prevSeqOf(m: JsMsg): number | undefined {
  const block = rawHeaderBlock(m);
  if (block) {
    const at = block.indexOf(PREV_SEQ_LINE);
    if (at >= 0) {
      let i = at + PREV_SEQ_LINE.length;
      while (block[i] === 0x20) i++;
      let n = 0;
      let digits = 0;
      for (let c = block[i]; c !== undefined && c >= 0x30 && c <= 0x39; c = block[++i]) {
        n = n * 10 + (c - 0x30);
        digits++;
      }
      while (block[i] === 0x20) i++;
      if (digits > 0 && digits <= 15 && block[i] === 0x0d) return n;
    }
  }
  const prev = m.headers?.get(PREV_SEQ_HEADER);
  return prev && /^[0-9]+$/.test(prev) ? Number(prev) : undefined;
}

/**
 * The stream sequence and the consumer's pending count (messages not yet delivered) of a delivered
 * message, read from its reply subject without building the whole delivery info (`m.info` does).
 * Both layouts: `$JS.ACK.<stream>.<consumer>.<delivered>.<seq>.<dseq>.<ts>.<pending>` (9 tokens)
 * and `$JS.ACK.<domain>.<hash>.<stream>.<consumer>.<delivered>.<seq>.<dseq>.<ts>.<pending>[.…]`
 * (11 or more). Null for anything else.
 */
export function ackReplyOf(reply: string): { seq: number; pending: number } | null {
  if (!reply.startsWith("$JS.ACK.")) return null;
  // One pass, no allocation but the result: this runs for every event the store reads.
  let count = 0;
  for (let i = reply.indexOf("."); i >= 0 && count < DOTS.length; i = reply.indexOf(".", i + 1)) DOTS[count++] = i;
  const first = count === 8 ? 5 : count >= 10 ? 7 : -1;
  if (first < 0) return null;
  const seq = tokenNumber(reply, first, count);
  const pending = tokenNumber(reply, first + 3, count);
  return Number.isSafeInteger(seq) && seq > 0 && Number.isSafeInteger(pending) && pending >= 0
    ? { seq, pending }
    : null;
}

/** The first dots of the reply being parsed (scratch space: ackReplyOf is synchronous; 16 > 10 dots). */
const DOTS = new Array<number>(16).fill(0);

/** Token k (0-based) of a reply whose first `count` dots are in DOTS, as a number (NaN if not digits). */
function tokenNumber(reply: string, k: number, count: number): number {
  const from = (DOTS[k - 1] as number) + 1;
  const to = k < count && k < DOTS.length ? (DOTS[k] as number) : reply.length;
  if (to <= from) return Number.NaN;
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = reply.charCodeAt(i) - 0x30;
    if (c < 0 || c > 9) return Number.NaN;
    n = n * 10 + c;
  }
  return n;
}

/** The reply subject of a delivered message (nats.js 3 has it on JsMsg without typing it). */
const replyOf = (m: JsMsg): string => {
  const reply = (m as JsMsg & { reply?: unknown }).reply;
  return typeof reply === "string" ? reply : "";
};

/** The stream sequence of a delivered message (the client's own parsing only as a fallback). */
export function streamSeqOf(m: JsMsg): number {
  return ackReplyOf(replyOf(m))?.seq ?? m.seq;
}

/** The consumer's pending count carried by a delivered message. */
export function pendingOf(m: JsMsg): number {
  return ackReplyOf(replyOf(m))?.pending ?? m.info.pending;
}

export function toEventRecord(m: JsMsg): EventRecord {
  return { seq: streamSeqOf(m), subject: m.subject, data: m.data, prevSeq: prevSeqOf(m) };
}
