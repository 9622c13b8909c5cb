// Removes the workspaces of deleted and archived sessions from this runner's disk: at once when
// their lifecycle record arrives, and in sweeps (at start and periodically) for records this runner
// missed while it was down.
import { readdir, rm, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  decoderFor,
  isSessionId,
  LifecycleRecord,
  lifecycleStreamName,
  parseLifecycleSubject,
  subjects,
} from "@fleet/protocol";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";

const decodeRecord = decoderFor(LifecycleRecord);

export interface WorkspaceJanitor {
  start(): Promise<void>;
  /** One sweep of the workspace root; resolves with the workspaces removed. */
  sweep(): Promise<number>;
  stop(): void;
}

/**
 * Contract: a workspace `<root>/<sessionId>` is removed when the session's last lifecycle record is
 * `session_deleted` or `session_archived` and the directory was last changed before that record (a
 * directory changed later belongs to a new session of the same id and is kept). Never throws; a
 * failure is logged and the next sweep tries again. Only per-session workspaces are ever removed.
 */
export function createWorkspaceJanitor(opts: {
  nc: NatsConnection;
  jsm: JetStreamManager;
  /** K: lifecycle records are in group 0's stream (default 1: `FLEET_EVENTS`). */
  groups?: number;
  root: string;
  sweepMs: number;
  logger: Logger;
}): WorkspaceJanitor {
  const root = resolve(opts.root);
  let sub: Subscription | undefined;
  let timer: NodeJS.Timeout | undefined;

  const removable = (record: LifecycleRecord | null) =>
    record !== null && (record.type === "session_deleted" || record.type === "session_archived");

  /** Removes the session's workspace if the record allows; true when it removed one. */
  async function removeFor(sessionId: string, record: LifecycleRecord): Promise<boolean> {
    const dir = join(root, sessionId);
    const info = await stat(dir).catch(() => undefined);
    if (!info?.isDirectory() || info.mtimeMs > record.ts) return false;
    await rm(dir, { recursive: true, force: true });
    opts.logger.info({ evt: "workspace_removed", sessionId, record: record.type }, "workspace of a removed session");
    return true;
  }

  async function sweep(): Promise<number> {
    let removed = 0;
    const names = await readdir(root).catch(() => [] as string[]);
    for (const name of names) {
      if (!isSessionId(name)) continue;
      try {
        const msg = await opts.jsm.direct.getMessage(lifecycleStreamName(opts.groups ?? 1), {
          last_by_subj: subjects.lifecycle(name),
        });
        const decoded = msg ? decodeRecord(msg.data) : undefined;
        const record = decoded?.ok ? decoded.value : null;
        if (record && removable(record) && (await removeFor(name, record))) removed++;
      } catch (err) {
        opts.logger.warn({ evt: "workspace_sweep_failed", sessionId: name, err }, "workspace sweep failed");
      }
    }
    return removed;
  }

  return {
    async start() {
      sub = opts.nc.subscribe(subjects.lifecycleAll, {
        callback: (err, msg) => {
          if (err) return;
          const sessionId = parseLifecycleSubject(msg.subject);
          const decoded = decodeRecord(msg.data);
          if (!sessionId || !decoded.ok || !removable(decoded.value)) return;
          void removeFor(sessionId, decoded.value).catch((e) =>
            opts.logger.warn({ evt: "workspace_remove_failed", sessionId, err: e }, "workspace removal failed"),
          );
        },
      });
      const every = () => {
        timer = setTimeout(() => void sweep().finally(every), opts.sweepMs);
        timer.unref();
      };
      void sweep().finally(every);
    },
    sweep,
    stop() {
      sub?.unsubscribe();
      if (timer) clearTimeout(timer);
    },
  };
}
