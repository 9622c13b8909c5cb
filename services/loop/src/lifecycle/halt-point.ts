// Fault injection for crash tests: stop a lifecycle operation after a named step, so a test can
// SIGKILL the process at exactly that point (`FLEET_LIFECYCLE_HALT_AFTER`).
import type { Logger } from "@fleet/runtime";

/**
 * Resolves after step `step` of operation `op` (`delete`, `archive`, `restore`), except at the
 * configured `<op>:<step>`: then it logs and never resolves.
 */
export type HaltPoint = (op: string, step: string, sessionId: string) => Promise<void>;

export function createHaltPoint(haltAfter: string, log: Logger): HaltPoint {
  return (op, step, sessionId) => {
    if (haltAfter === "" || `${op}:${step}` !== haltAfter) return Promise.resolve();
    log.warn({ evt: "lifecycle_halted", op, step, sessionId }, "lifecycle halted (FLEET_LIFECYCLE_HALT_AFTER)");
    return new Promise<void>(() => undefined);
  };
}
