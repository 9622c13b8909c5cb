// A session snapshot as stored (PROTOCOL changes 42, 64): a header line, then the body cut into
// parts that each fit in a message. The body is gzipped: a JSON line of the fold without its tree's
// entries (their ids instead) and the shell's marks, then the entries as JSON lines, which a load
// keeps as bytes and parses one by one as they are read. Pure but for zlib (CRC-32, gzip).
import { promisify } from "node:util";
import { crc32, gunzipSync, gzip } from "node:zlib";
import {
  type Decoded,
  decodeSessionFoldApart,
  encodeSessionFoldApart,
  SESSION_FOLD_FORMAT,
  type SessionState,
} from "@fleet/protocol";
import { z } from "zod";
import type { LifecycleMarks } from "../lifecycle/lifecycle-marks.js";
import { traceFrom } from "./trace-mark.js";

/** Version of the envelope (header and body layout); the fold's own is `SESSION_FOLD_FORMAT`. */
export const SNAPSHOT_ENVELOPE_VERSION = 3;

/** What a snapshot says of itself: the log position it folds, and how to check its body. */
export const SnapshotHeader = z.object({
  format: z.literal("fleet-snapshot"),
  v: z.number().int(),
  /** `SESSION_FOLD_FORMAT` of the fold that made it. */
  fold: z.number().int(),
  sessionId: z.string(),
  /** Stream sequence of the last event folded. */
  seq: z.number().int().positive(),
  /** That message's `Nats-Msg-Id` (`""` if none): the load checks the log still holds it at `seq`. */
  msgId: z.string(),
  /** Events folded (`SessionState.events`). */
  events: z.number().int().nonnegative(),
  /** Bytes of the (gzipped) body, and the parts it is cut into (the first one after the header line). */
  bytes: z.number().int().nonnegative(),
  parts: z.number().int().positive(),
  /** CRC-32 (zlib's) of the whole body. */
  crc32: z.number().int().nonnegative(),
  /**
   * `traceFrom` of the marks (the open run's acceptance): a load reads the log from there, in the
   * same read as the events after `seq`. Absent when the events after `seq` are enough.
   */
  traceFrom: z.number().int().positive().optional(),
});
export type SnapshotHeader = z.infer<typeof SnapshotHeader>;

/** A session's fold at one log position, with what the loop derives beside it. */
export interface SessionSnapshot {
  sessionId: string;
  seq: number;
  msgId: string;
  state: SessionState;
  marks: LifecycleMarks;
}

/** The stored form: `parts[0]` is the value of key `<sessionId>`, `parts[k]` of `<sessionId>.<k>`. */
export interface EncodedSnapshot {
  header: SnapshotHeader;
  parts: Uint8Array[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });
const NEWLINE = 0x0a;
const gzipAsync = promisify(gzip);

/**
 * Serialises `snapshot` (its state is read now, before the first await, and not kept), gzips it
 * off the event loop, and cuts it into parts of at most `partBytes` body bytes each. The entries a
 * load read back and left unparsed are copied as stored. Rejects only when the state cannot be
 * serialised (a cycle): a snapshot is then skipped.
 */
export async function encodeSnapshot(snapshot: SessionSnapshot, partBytes: number): Promise<EncodedSnapshot> {
  const apart = encodeSessionFoldApart(snapshot.state);
  const core = encoder.encode(
    `${JSON.stringify({ fold: apart.fold, entryIds: apart.entryIds, marks: snapshot.marks })}\n`,
  );
  const gzipped = await gzipAsync(concat([core, apart.entryLines], core.byteLength + apart.entryLines.byteLength));
  const body = new Uint8Array(gzipped.buffer, gzipped.byteOffset, gzipped.byteLength);
  const parts = Math.max(1, Math.ceil(body.byteLength / partBytes));
  const header: SnapshotHeader = {
    format: "fleet-snapshot",
    v: SNAPSHOT_ENVELOPE_VERSION,
    fold: SESSION_FOLD_FORMAT,
    sessionId: snapshot.sessionId,
    seq: snapshot.seq,
    msgId: snapshot.msgId,
    events: snapshot.state.events,
    bytes: body.byteLength,
    parts,
    crc32: crc32(body),
  };
  const from = traceFrom(snapshot.marks.trace);
  if (from !== undefined) header.traceFrom = from;
  const headLine = encoder.encode(`${JSON.stringify(header)}\n`);
  const first = body.subarray(0, partBytes);
  const head = new Uint8Array(headLine.byteLength + first.byteLength);
  head.set(headLine, 0);
  head.set(first, headLine.byteLength);
  const out = [head];
  for (let k = 1; k < parts; k++) out.push(body.subarray(k * partBytes, (k + 1) * partBytes));
  return { header, parts: out };
}

/** Why a stored snapshot is not used (the load then folds the whole log). */
export type SnapshotRejection = "unreadable" | "stale_version" | "corrupt" | "other_session";

export type HeaderRead =
  | { ok: true; header: SnapshotHeader; first: Uint8Array }
  | { ok: false; reason: SnapshotRejection; error: string };

/** Splits the value of key `<sessionId>` into its header and the body's first part. Never throws. */
export function readSnapshotHead(value: Uint8Array, sessionId: string): HeaderRead {
  const newline = value.indexOf(NEWLINE);
  if (newline < 0) return { ok: false, reason: "unreadable", error: "no header line" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(value.subarray(0, newline)));
  } catch (err) {
    return { ok: false, reason: "unreadable", error: `header is not JSON: ${(err as Error).message}` };
  }
  const header = SnapshotHeader.safeParse(parsed);
  if (!header.success) return { ok: false, reason: "unreadable", error: `header: ${header.error.message}` };
  const h = header.data;
  if (h.v !== SNAPSHOT_ENVELOPE_VERSION || h.fold !== SESSION_FOLD_FORMAT) {
    return {
      ok: false,
      reason: "stale_version",
      error: `envelope v${h.v} fold v${h.fold}; this worker reads v${SNAPSHOT_ENVELOPE_VERSION} fold v${SESSION_FOLD_FORMAT}`,
    };
  }
  if (h.sessionId !== sessionId) return { ok: false, reason: "other_session", error: `made for ${h.sessionId}` };
  return { ok: true, header: h, first: value.subarray(newline + 1) };
}

const Run = z.object({
  root: z.looseObject({ runId: z.string(), traceId: z.string(), rootSpanId: z.string(), flags: z.number() }),
  lastStepId: z.string(),
  standalone: z.boolean(),
  compactionId: z.string().optional(),
});
const Marks = z.object({
  deletion: z.object({ commandId: z.string(), acceptSeq: z.number(), tombstoneSeq: z.number().optional() }).optional(),
  restore: z
    .object({
      commandId: z.string(),
      by: z.string(),
      requestedAt: z.number(),
      appended: z.number(),
      restored: z.boolean(),
      after: z.number(),
    })
    .optional(),
  trace: z
    .object({
      cursor: z.object({
        lastCommandTrace: z.looseObject({ traceparent: z.string() }).optional(),
        run: Run.optional(),
      }),
      acceptedSeq: z.number().int().positive().optional(),
      runFrom: z.number().int().positive().optional(),
      pendingFrom: z.number().int().positive().optional(),
    })
    .optional(),
});

/**
 * The snapshot whose header is `header` and whose body parts (in order, the first one included)
 * are `parts`: checked against the header's length and CRC-32, then decoded. Never throws.
 */
export function decodeSnapshotBody(
  header: SnapshotHeader,
  parts: readonly Uint8Array[],
): { ok: true; snapshot: SessionSnapshot } | { ok: false; reason: SnapshotRejection; error: string } {
  const bytes = parts.reduce((n, p) => n + p.byteLength, 0);
  if (parts.length !== header.parts || bytes !== header.bytes) {
    return {
      ok: false,
      reason: "corrupt",
      error: `body is ${parts.length} parts, ${bytes} bytes; header says ${header.parts}, ${header.bytes}`,
    };
  }
  const body = parts.length === 1 ? (parts[0] as Uint8Array) : concat(parts, bytes);
  const sum = crc32(body);
  if (sum !== header.crc32) return { ok: false, reason: "corrupt", error: `crc32 ${sum}, header says ${header.crc32}` };
  let parsed: { fold?: unknown; entryIds?: unknown; marks?: unknown };
  let lines: Uint8Array;
  try {
    // gunzip checks the text's own length and CRC-32 too; the CRC-32 above guards the stored bytes.
    const plain = gunzipSync(body);
    const newline = plain.indexOf(NEWLINE);
    if (newline < 0) throw new Error("no line of the fold");
    parsed = JSON.parse(decoder.decode(plain.subarray(0, newline)));
    lines = plain.subarray(newline + 1);
  } catch (err) {
    return { ok: false, reason: "corrupt", error: `body is not gzipped JSON lines: ${(err as Error).message}` };
  }
  // The entries stay bytes: each is parsed when first read.
  const state: Decoded<SessionState> = decodeSessionFoldApart(parsed?.fold, parsed?.entryIds, lines);
  if (!state.ok) return { ok: false, reason: "corrupt", error: `fold: ${state.error}` };
  if (state.value.events !== header.events) {
    return {
      ok: false,
      reason: "corrupt",
      error: `fold has ${state.value.events} events; header says ${header.events}`,
    };
  }
  const marks = Marks.safeParse(parsed.marks);
  if (!marks.success) return { ok: false, reason: "corrupt", error: `marks: ${marks.error.message}` };
  const from = traceFrom(marks.data.trace as LifecycleMarks["trace"]);
  if (from !== header.traceFrom) {
    return {
      ok: false,
      reason: "corrupt",
      error: `marks read the trace from ${from}; header says ${header.traceFrom}`,
    };
  }
  return {
    ok: true,
    snapshot: {
      sessionId: header.sessionId,
      seq: header.seq,
      msgId: header.msgId,
      state: state.value,
      marks: marks.data as LifecycleMarks,
    },
  };
}

function concat(parts: readonly Uint8Array[], bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
