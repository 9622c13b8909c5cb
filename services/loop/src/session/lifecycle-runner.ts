// Deletions, archives and restores the log shows as begun, carried out by the shell from where
// they stand (the steps themselves are `../lifecycle/`'s).
import { parseArchive } from "@fleet/protocol";
import { sleep } from "@fleet/runtime";
import { tombstoneDraft } from "../decide/decide-lifecycle.js";
import type { DecideContext } from "../decide/decision.js";
import type { LifecycleDeps } from "../lifecycle/lifecycle-deps.js";
import { runDeletion } from "../lifecycle/run-deletion.js";
import { runRestore } from "../lifecycle/run-restore.js";
import { decideContextOf } from "./decide-context.js";
import { appendDraft, appendEvent, detachShell, type SessionShell } from "./session-shell.js";

/**
 * Carries out the deletion or restore the log shows as begun, from where it stands, retrying a
 * failed step with backoff until it is done or the shell is detached. A finished deletion removes
 * the actor; the next command of the session loads its empty log.
 */
export function resumeLifecycle(shell: SessionShell): Promise<void> {
  const lifecycle = shell.deps.lifecycle;
  if (!lifecycle) return Promise.resolve();
  shell.lifecycleTask ??= (async () => {
    const op = shell.state.deleting?.op ?? "restore";
    const started = shell.deps.now();
    let delay = 100;
    for (;;) {
      if (shell.detached) return;
      try {
        if (shell.state.deleting) await deleteSession(shell, lifecycle);
        else {
          await restoreSession(shell, lifecycle);
          shell.restoreDone = true;
          shell.indexEntry?.settle();
        }
        lifecycle.metrics.lifecycleDone.inc({ op });
        lifecycle.metrics.lifecycleDuration.observe({ op }, (shell.deps.now() - started) / 1000);
        return;
      } catch (err) {
        if (shell.detached) return;
        shell.log.warn({ evt: "lifecycle_retry", op, err, retryInMs: delay }, "lifecycle step failed; retrying");
        await sleep(delay, shell.detachedSignal.signal);
        delay = Math.min(delay * 2, 30_000);
      }
    }
  })().finally(() => {
    shell.lifecycleTask = undefined;
  });
  return shell.lifecycleTask;
}

async function deleteSession(shell: SessionShell, lifecycle: LifecycleDeps): Promise<void> {
  const deletion = shell.state.deleting;
  const mark = shell.marks.deletion;
  if (!deletion || !mark) return;
  if (!deletion.event) {
    // A crash came between the outcome and the tombstone: append it now.
    const cmd = { type: deletion.op === "archive" ? "archive_session" : "delete_session", id: deletion.commandId };
    const draft = tombstoneDraft(shell.state, shell.sessionId, cmd as never, decideContextOf(shell));
    await appendDraft(shell, { ...draft, commandId: deletion.commandId });
  }
  const tombstone = shell.state.deleting?.event;
  if (!tombstone || mark.tombstoneSeq === undefined) return;
  // No snapshot is made once a deletion is accepted; one still being written lands before the purge.
  shell.snapshotWriter?.stop();
  await shell.snapshotWriter?.idle();
  await runDeletion(
    {
      sessionId: shell.sessionId,
      partition: shell.deps.partition,
      commandId: deletion.commandId,
      tombstone,
      acceptSeq: mark.acceptSeq,
      tombstoneSeq: mark.tombstoneSeq,
      lastSeq: () => shell.appender.lastSeq,
      signal: shell.detachedSignal.signal,
    },
    lifecycle,
  );
  // Nothing of the session is left to finish: its entry goes before the actor does.
  await shell.indexEntry?.forget().catch(() => undefined);
  shell.removed = true;
  shell.dead = true;
  detachShell(shell);
  shell.deps.onRemoved?.(shell.sessionId);
}

async function restoreSession(shell: SessionShell, lifecycle: LifecycleDeps): Promise<void> {
  const restore = shell.marks.restore;
  if (!restore) return;
  const record = shell.state.commands.get(restore.commandId);
  if (record?.outcome !== "accepted") return;
  await runRestore(
    {
      sessionId: shell.sessionId,
      commandId: restore.commandId,
      by: restore.by,
      requestedAt: restore.requestedAt,
      archive: lifecycle.archive.ref(shell.sessionId),
      appended: () => restore.appended,
      restored: () => restore.restored,
      append: async (event, msgId) => {
        shell.restoring = true;
        try {
          await appendEvent(shell, event, msgId);
        } finally {
          shell.restoring = false;
        }
      },
      appendRestored: (events) =>
        appendDraft(shell, {
          id: shell.deps.newId(),
          commandId: restore.commandId,
          body: { type: "session_restored", archive: lifecycle.archive.ref(shell.sessionId), events },
        }),
      recordSpend: (counted) => shell.budget.recordAll(counted),
      signal: shell.detachedSignal.signal,
    },
    lifecycle,
  );
}

/** The session's archive header (`null`: no archive), for a restore's decision. */
export async function readArchiveHeader(shell: SessionShell): Promise<DecideContext["archive"]> {
  const lifecycle = shell.deps.lifecycle;
  if (!lifecycle) return null;
  const text = await lifecycle.archive.read(shell.sessionId);
  if (text === null) return null;
  const parsed = parseArchive(text);
  if (!parsed.ok) {
    shell.log.warn({ evt: "archive_unreadable", error: parsed.error }, "the session's archive is unreadable");
    return null;
  }
  return { header: parsed.value.header, ref: lifecycle.archive.ref(shell.sessionId) };
}
