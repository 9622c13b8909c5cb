// The archive file of one session: a header line, then every event of its log with its stream
// sequence (PROTOCOL "Session lifecycle"). Pure encoding and parsing.
import { z } from "zod";
import { DaySpend } from "./budget.js";
import { type Decoded, decodeEvent, formatIssues, parseJson } from "./codec.js";
import type { FleetEvent } from "./events.js";
import { SessionId } from "./ids.js";
import { Requester } from "./lifecycle.js";

export const ARCHIVE_FORMAT = "fleet-archive";

/** Line 1 of an archive. `events` counts the lines after it; `spend` is the session's per-day spend. */
export const ArchiveHeader = z.object({
  format: z.literal(ARCHIVE_FORMAT),
  v: z.literal(1),
  sessionId: SessionId,
  /** The `archive_session` command that wrote it. */
  commandId: z.string().min(1).max(256),
  by: Requester,
  archivedAt: z.number().int().nonnegative(),
  events: z.number().int().nonnegative(),
  /** Stream sequences of the first and last archived event (0 when there is none). */
  firstSeq: z.number().int().nonnegative(),
  lastSeq: z.number().int().nonnegative(),
  spend: z.array(DaySpend),
});
export type ArchiveHeader = z.infer<typeof ArchiveHeader>;

/** One archived event: its stored JSON as it was, and its stream sequence in FLEET_EVENTS. */
export interface ArchivedRecord {
  seq: number;
  data: Uint8Array;
}

const decoder = new TextDecoder();

/**
 * The archive's text: the header, then `{"seq":<n>,"event":<the stored event JSON>}` per event, one
 * per line, in log order. The events' bytes are copied, not re-serialised.
 */
export function encodeArchive(header: ArchiveHeader, records: readonly ArchivedRecord[]): string {
  const lines = [JSON.stringify(header)];
  for (const r of records) lines.push(`{"seq":${r.seq},"event":${decoder.decode(r.data)}}`);
  return `${lines.join("\n")}\n`;
}

const ArchiveLine = z.object({ seq: z.number().int().positive(), event: z.unknown() });

/** A parsed archive: the header and the events in log order, each checked against the event schema. */
export interface ParsedArchive {
  header: ArchiveHeader;
  events: FleetEvent[];
}

/**
 * Parses an archive. Fails on a bad header, a bad line, an event of another session, sequences out
 * of order, or a count other than the header's (a cut file).
 */
export function parseArchive(text: string): Decoded<ParsedArchive> {
  const lines = text.split("\n").filter((l) => l.length > 0);
  const first = parseJson(lines[0] ?? "", Number.MAX_SAFE_INTEGER);
  if (!first.ok) return failed(`archive header: ${first.error}`);
  const header = ArchiveHeader.safeParse(first.value);
  if (!header.success) return failed(`archive header: ${formatIssues(header.error.issues)[0]?.message}`);
  const events: FleetEvent[] = [];
  let lastSeq = 0;
  for (let i = 1; i < lines.length; i++) {
    const json = parseJson(lines[i] as string, Number.MAX_SAFE_INTEGER);
    const line = json.ok ? ArchiveLine.safeParse(json.value) : undefined;
    if (!line?.success) return failed(`archive line ${i + 1} is not {seq, event}`);
    if (line.data.seq <= lastSeq) return failed(`archive line ${i + 1}: sequence ${line.data.seq} out of order`);
    lastSeq = line.data.seq;
    const event = decodeEvent(JSON.stringify(line.data.event));
    if (!event.ok) return failed(`archive line ${i + 1}: ${event.error}`);
    if (event.value.meta.sessionId !== header.data.sessionId) {
      return failed(`archive line ${i + 1}: an event of session ${event.value.meta.sessionId}`);
    }
    events.push(event.value);
  }
  if (events.length !== header.data.events) {
    return failed(`archive holds ${events.length} events; its header says ${header.data.events}`);
  }
  return { ok: true, value: { header: header.data, events } };
}

function failed(message: string): Decoded<ParsedArchive> {
  return { ok: false, error: message, issues: [{ path: "", message }] };
}
