// `fleet rm`, `fleet archive`, `fleet restore`: the session lifecycle (each waits until it is done).
import type { LifecycleRecord } from "@fleet/protocol";
import { withClient } from "../connect.js";
import { type CliIo, outStyle } from "../io.js";

export interface LifecycleCommandOptions {
  json?: boolean;
  /** Who asks (the lifecycle record names it); default `<user>@<host>`. */
  by?: string;
  timeoutMs?: number;
}

const DONE: Record<LifecycleRecord["type"], string> = {
  session_deleted: "deleted",
  session_archived: "archived",
  session_restored: "restored",
};

/** Deletes, archives or restores a session and prints its lifecycle record (one line, or JSON). */
export async function lifecycleCommand(
  io: CliIo,
  op: "delete" | "archive" | "restore",
  sessionId: string,
  opts: LifecycleCommandOptions,
): Promise<number> {
  return withClient(io, async (client) => {
    const options = {
      ...(opts.by !== undefined ? { by: opts.by } : {}),
      timeoutMs: opts.timeoutMs ?? 120_000,
    };
    const record =
      op === "delete"
        ? await client.deleteSession(sessionId, options)
        : op === "archive"
          ? await client.archiveSession(sessionId, options)
          : await client.restoreSession(sessionId, options);
    if (opts.json) {
      io.stdout.write(`${JSON.stringify(record)}\n`);
      return 0;
    }
    const where = record.type === "session_deleted" ? "" : ` (${record.archive.location})`;
    io.stdout.write(`${outStyle(io).green("✓")} ${sessionId} ${DONE[record.type]}: ${record.events} events${where}\n`);
    return 0;
  });
}
