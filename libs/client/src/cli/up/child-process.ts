// Spawning a child that dies with us (PR_SET_PDEATHSIG via util-linux setpriv where available).
import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";
import { existsSync } from "node:fs";

const SETPRIV = "/usr/bin/setpriv";

/** Spawns `command`; on Linux the child gets SIGKILL if this process dies without stopping it. */
export function spawnBound(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  if (process.platform === "linux" && existsSync(SETPRIV)) {
    return spawn(SETPRIV, ["--pdeathsig", "KILL", "--", command, ...args], options);
  }
  return spawn(command, [...args], options);
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Resolves when the child has exited (also for a spawn error, as code null). */
export function exitOf(child: ChildProcess): Promise<Exit> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", () => resolve({ code: null, signal: null }));
  });
}

export const isRunning = (child: ChildProcess) =>
  child.exitCode === null && child.signalCode === null && child.pid !== undefined;

/** SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
export async function stopChild(child: ChildProcess, graceMs: number): Promise<Exit> {
  const exited = exitOf(child);
  if (!isRunning(child)) return exited;
  child.kill("SIGTERM");
  const timer = setTimeout(() => {
    if (isRunning(child)) child.kill("SIGKILL");
  }, graceMs);
  const result = await exited;
  clearTimeout(timer);
  return result;
}

export function describeExit(exit: Exit): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
}
