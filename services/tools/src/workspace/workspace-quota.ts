import { formatSize } from "../builtin/truncate.js";
import { measureWorkspace } from "./workspace-usage.js";

/** Thrown when a change would take a workspace over its quota; the result text is its message. */
export class WorkspaceQuotaError extends Error {
  override name = "WorkspaceQuotaError";
}

/**
 * The size quota of one workspace (`FLEET_WORKSPACE_QUOTA_MB`), shared by every call in it. The
 * usage is measured by walking the workspace when unknown or older than `staleAfterMs`; file tools
 * reserve what they add before writing, and processes mark it unknown when they end.
 */
export interface WorkspaceQuota {
  readonly limitBytes: number;
  /** The workspace's usage (measured when unknown or stale). */
  usage(opts?: { fresh?: boolean }): Promise<number>;
  /**
   * Records `delta` bytes about to be added (negative: freed). Throws `WorkspaceQuotaError` naming
   * `what` when a positive delta would take the usage over the limit; nothing is recorded then.
   */
  reserve(delta: number, what: string): Promise<void>;
  /** Forgets the usage (a process wrote to the workspace). */
  invalidate(): void;
}

export function createWorkspaceQuota(
  root: string,
  limitBytes: number,
  opts: { staleAfterMs?: number; now?: () => number; measure?: (root: string) => Promise<number> } = {},
): WorkspaceQuota {
  const staleAfter = opts.staleAfterMs ?? 60_000;
  const now = opts.now ?? Date.now;
  const measure = opts.measure ?? measureWorkspace;
  let known: { bytes: number; at: number } | undefined;
  let measuring: Promise<number> | undefined;
  let generation = 0;

  const usage = async (o: { fresh?: boolean } = {}) => {
    if (!o.fresh && known && now() - known.at < staleAfter) return known.bytes;
    if (!measuring) {
      const started = generation;
      measuring = measure(root).finally(() => {
        measuring = undefined;
      });
      const bytes = await measuring;
      if (started === generation) known = { bytes, at: now() };
      return bytes;
    }
    return measuring;
  };

  return {
    limitBytes,
    usage,
    async reserve(delta, what) {
      const current = await usage();
      if (delta > 0 && current + delta > limitBytes) {
        throw new WorkspaceQuotaError(
          `Workspace quota exceeded: ${what} would bring the workspace to ${formatSize(current + delta)} of its ${formatSize(limitBytes)} quota`,
        );
      }
      if (known) known = { bytes: Math.max(0, known.bytes + delta), at: known.at };
    },
    invalidate() {
      generation++;
      known = undefined;
    },
  };
}
