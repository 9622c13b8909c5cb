// The workspace quota for processes: a command starts only with room left, no file it writes may
// outgrow that room (RLIMIT_FSIZE), and the command is stopped once the workspace passes its quota.
import { formatSize } from "../builtin/truncate.js";
import type { WorkspaceQuota } from "../workspace/workspace-quota.js";
import type { ProcessSandbox } from "./process-sandbox.js";

export interface QuotaSandboxOptions {
  /** Shortest time between two measures of the workspace while a command runs. Default 500 ms. */
  pollMs?: number;
  /** Grace between SIGTERM and SIGKILL when the quota stops a command. Default 500 ms. */
  killGraceMs?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The text a command stopped by the quota ends with. */
export function quotaStopText(used: number, limit: number): string {
  return `Command stopped: the workspace grew to ${formatSize(used)}, over its quota of ${formatSize(limit)}`;
}

/**
 * `sandbox` with `quota` applied to every process started through it: no file a process writes may
 * exceed the room left when it started (RLIMIT_FSIZE; none when the workspace is full, so a
 * command can still remove files), and the command is stopped when the workspace grows past the
 * quota (or past its size at the start, when it was over already). The watcher measures the
 * workspace at most every `pollMs`, and no more often than three times the last measure took; the
 * usage is measured again when the command ends.
 */
export function withWorkspaceQuota(
  sandbox: ProcessSandbox,
  quota: WorkspaceQuota,
  opts: QuotaSandboxOptions = {},
): ProcessSandbox {
  const pollMs = opts.pollMs ?? 500;
  return {
    status: sandbox.status,
    async start(argv, startOpts) {
      const used = await quota.usage();
      const room = Math.max(0, quota.limitBytes - used);
      // Over the quota already (a cleanup, say): the command may free space but not add any.
      const ceiling = Math.max(quota.limitBytes, used);
      const fileBytes = Math.min(room, startOpts.limits?.fileBytes ?? room);
      const started = await sandbox.start(argv, { ...startOpts, limits: { ...startOpts.limits, fileBytes } });
      if (!started.ok) return started;
      const proc = started.process;
      let reason: string | undefined;
      let running = true;
      const ended = new Promise<void>((resolve) => {
        proc.child.once("exit", (code, signal) => {
          // SIGXFSZ (25), or a shell reporting its child's: a file hit the room the quota left.
          if (!reason && (signal === "SIGXFSZ" || code === 128 + 25) && fileBytes === room) {
            reason = `Command stopped: a file reached the ${formatSize(room)} left in the workspace's ${formatSize(quota.limitBytes)} quota`;
          }
          resolve();
        });
        proc.child.once("error", () => resolve());
      });
      void ended.then(() => {
        running = false;
        quota.invalidate();
        // Measured again now, so that the next command or write does not wait for it.
        void quota.usage().catch(() => undefined);
      });
      void (async () => {
        let wait = pollMs;
        while (running) {
          await Promise.race([sleep(wait), ended]);
          if (!running) return;
          const t0 = Date.now();
          const bytes = await quota.usage({ fresh: true }).catch(() => 0);
          wait = Math.max(pollMs, 3 * (Date.now() - t0));
          if (running && bytes > ceiling) {
            reason = quotaStopText(bytes, quota.limitBytes);
            await proc.kill(opts.killGraceMs ?? 500);
            return;
          }
        }
      })();
      return {
        ok: true,
        process: {
          child: proc.child,
          anyAlive: () => proc.anyAlive(),
          kill: (graceMs) => proc.kill(graceMs),
          release: async () => {
            running = false;
            await proc.release();
          },
          stopReason: () => reason ?? proc.stopReason?.(),
        },
      };
    },
  };
}
