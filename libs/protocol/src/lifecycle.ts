// Session lifecycle: deletion, archive and restore (PROTOCOL "Session lifecycle"). Schemas, names
// and the step order as data; no I/O.
import { z } from "zod";
import { DaySpend } from "./budget.js";
import { SessionId } from "./ids.js";

/** What a `session_deleting` removes the session for: `delete`, or `archive` (written out first). */
export const LifecycleOp = z.enum(["delete", "archive"]);
export type LifecycleOp = z.infer<typeof LifecycleOp>;

/** Who asked, as the client states it (the gateway states its token's tenant, role and fingerprint). */
export const Requester = z.string().min(1).max(256);

/**
 * Where an archive is: `object_store` (bucket `fleet_archive`, `location` = the events object's
 * name) or `directory` (`location` = the events file's path on the loop worker's file system).
 */
export const ArchiveRef = z.object({
  store: z.enum(["object_store", "directory"]),
  location: z.string().min(1),
});
export type ArchiveRef = z.infer<typeof ArchiveRef>;

const recordFields = {
  v: z.literal(1),
  sessionId: SessionId,
  /** The lifecycle command's id. */
  commandId: z.string().min(1).max(256),
  by: Requester,
  /** `ts` of the command's `command_accepted`. */
  requestedAt: z.number().int().nonnegative(),
  /** When this record was written. */
  ts: z.number().int().nonnegative(),
  /** The loop worker that wrote it. */
  producer: z.string().min(1),
};

/**
 * The auditor's record of a lifecycle operation, on `fleet.evt.lifecycle.<sessionId>` of
 * FLEET_EVENTS (never purged with a session; the audit mirror copies it). Written once the operation
 * has removed everything but the session's tombstone (or, for a restore, appended every event).
 * `events`: how many events the session had (deleted, archived) or got back (restored); `spend`:
 * what it spent per UTC day, now counted in the tenant's ledger.
 */
export const LifecycleRecord = z.discriminatedUnion("type", [
  z.object({ type: z.literal("session_deleted"), ...recordFields, events: z.number().int(), spend: z.array(DaySpend) }),
  z.object({
    type: z.literal("session_archived"),
    ...recordFields,
    events: z.number().int(),
    spend: z.array(DaySpend),
    archive: ArchiveRef,
  }),
  z.object({ type: z.literal("session_restored"), ...recordFields, events: z.number().int(), archive: ArchiveRef }),
]);
export type LifecycleRecord = z.infer<typeof LifecycleRecord>;
export type LifecycleRecordType = LifecycleRecord["type"];

/** The record a deletion of kind `op` ends with. */
export const removalRecordType = (op: LifecycleOp): "session_deleted" | "session_archived" =>
  op === "archive" ? "session_archived" : "session_deleted";

/**
 * The steps of a deletion (`delete_session`, `archive_session`), in order. Each is idempotent and
 * the sequence resumes from the log: `accepted` (the `command_accepted` and `session_deleting`
 * tombstone are in the log), `archived` (archive only), `blobs`, `tool_results`, `spend_rolled`
 * (into the ledger; the session's `spend.*` keys removed), `events_purged` (everything before the
 * `command_accepted`), `projection` (the store applied the tombstone), `recorded` (the lifecycle
 * record), `ledger_settled`, `tombstone_purged`.
 */
export const DELETION_STEPS = [
  "accepted",
  "archived",
  "blobs",
  "tool_results",
  "spend_rolled",
  "events_purged",
  "projection",
  "recorded",
  "ledger_settled",
  "tombstone_purged",
] as const;
export type DeletionStep = (typeof DELETION_STEPS)[number];

/**
 * The steps of a restore: `accepted`, `events_partial` (half of the archived events appended),
 * `events` (all of them), `restored` (the `session_restored` event), `ledger_unrolled`,
 * `recorded`, `ledger_settled`, `archive_removed`.
 */
export const RESTORE_STEPS = [
  "accepted",
  "events_partial",
  "events",
  "restored",
  "ledger_unrolled",
  "recorded",
  "ledger_settled",
  "archive_removed",
] as const;
export type RestoreStep = (typeof RESTORE_STEPS)[number];

/** Names of a session's archive in bucket `fleet_archive` (relative paths in `FLEET_ARCHIVE_DIR`). */
export const archiveNames = (sessionId: string) => ({
  /** The header line and every event with its stream sequence (`encodeArchive`): the archive itself. */
  events: `sessions/${sessionId}/events.jsonl`,
  /** The session tree as pi v3 JSONL, for readers without Fleet. */
  pi: `sessions/${sessionId}/pi.jsonl`,
});

/**
 * Every point a lifecycle operation can be stopped at for a crash test (`FLEET_LIFECYCLE_HALT_AFTER`):
 * `<op>:<step>`, e.g. `archive:events_purged`, `restore:events_partial`.
 */
export const LIFECYCLE_HALT_POINTS: readonly string[] = [
  ...DELETION_STEPS.map((s) => `delete:${s}`),
  ...DELETION_STEPS.map((s) => `archive:${s}`),
  ...RESTORE_STEPS.map((s) => `restore:${s}`),
];
