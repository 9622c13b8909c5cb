import type { Logger } from "pino";
import type { ProcessSandbox } from "../sandbox/process-sandbox.js";

/** One line at start saying how tools' processes run; a warning when unconfined, an error when they cannot run. */
export function logSandbox(logger: Pick<Logger, "info" | "warn" | "error">, sandbox: ProcessSandbox): void {
  const status = sandbox.status;
  if (status.mode === "bwrap") {
    logger.info({ evt: "sandbox_ready", ...status }, "tool processes run in a bubblewrap sandbox");
  } else if (status.mode === "off") {
    logger.warn(
      { evt: "sandbox_off" },
      "FLEET_SANDBOX=off: tool processes run unconfined, as the runner's user, with its file system and network",
    );
  } else {
    logger.error(
      { evt: "sandbox_unavailable", check: status.check, reason: status.reason },
      `the process sandbox is unavailable (check ${status.check} failed): bash and other process tools refuse to run`,
    );
  }
}
