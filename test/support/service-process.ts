// Runs a service's real entry point (loop, tool runner, session store, gateway) as a child process (its
// build, or its sources: node-entry.ts), with its own environment (e.g. its own NATS user).
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, existsSync } from "node:fs";
import { join } from "node:path";
import { nodeArgsFor } from "./node-entry.js";

const ROOT = join(import.meta.dirname, "..", "..");
const ENTRIES = {
  loop: "services/loop/src/main.ts",
  tools: "services/tools/src/main.ts",
  store: "services/session-store/src/main.ts",
  gateway: "services/gateway/src/main.ts",
} as const;
/** The pino `evt` each service logs once it serves. */
export const READY_EVT = {
  loop: "loop_started",
  tools: "ops_listening",
  store: "store_started",
  gateway: "gateway_started",
} as const;

const SETPRIV = "/usr/bin/setpriv";

export type ServiceName = keyof typeof ENTRIES;

export interface ServiceProcess {
  name: ServiceName;
  proc: ChildProcess;
  output(): string;
  /** Resolves once the service logged `evt` (default: its ready event); rejects with its output if it exits. */
  waitForLog(evt?: string, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** `logFile`: every line the service writes is also appended there (kept after the process ends). */
export function spawnService(name: ServiceName, env: Record<string, string>, logFile?: string): ServiceProcess {
  const args = nodeArgsFor(join(ROOT, ENTRIES[name]));
  // With util-linux `setpriv` the service dies with this process (PR_SET_PDEATHSIG), even on SIGKILL;
  // setpriv execs node, so `proc.pid` is the service's own pid.
  const [command, argv] = existsSync(SETPRIV)
    ? [SETPRIV, ["--pdeathsig", "KILL", "--", process.execPath, ...args]]
    : [process.execPath, args];
  const proc = spawn(command, argv, {
    // Only what the service needs: no NATS_* settings of the test's own environment leak in.
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      LOG_LEVEL: "info",
      // The suite's check of every appended event (vitest.config.ts) holds in service processes too.
      ...(process.env.FLEET_VALIDATE_APPENDS ? { FLEET_VALIDATE_APPENDS: process.env.FLEET_VALIDATE_APPENDS } : {}),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout?.on("data", (d) => (out += d));
  proc.stderr?.on("data", (d) => (out += d));
  if (logFile !== undefined) {
    const file = createWriteStream(logFile, { flags: "a" });
    proc.stdout?.pipe(file, { end: false });
    proc.stderr?.pipe(file, { end: false });
    proc.once("close", () => file.end());
  }
  return {
    name,
    proc,
    output: () => out,
    async waitForLog(evt = READY_EVT[name], timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        if (out.includes(`"evt":"${evt}"`)) return;
        if (proc.exitCode !== null) throw new Error(`${name} exited (${proc.exitCode}): ${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`${name}: no ${evt} within ${timeoutMs} ms: ${out}`);
    },
    stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
      const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
      proc.kill("SIGTERM");
      const hard = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      return exited.finally(() => clearTimeout(hard));
    },
  };
}
