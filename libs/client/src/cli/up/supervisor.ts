// Runs the worker processes of `fleet up`, restarting a failed one with backoff and reporting it.
import type { ChildProcess } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { describeExit, type Exit, exitOf, isRunning, spawnBound, stopChild } from "./child-process.js";

export interface ServiceSpec {
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** stdout and stderr are appended here. */
  logFile: string;
  /** `http://127.0.0.1:<port>` of its ops server, for the banner. */
  opsUrl: string | null;
}

export interface SupervisorEvents {
  /** A child exited while it should be running; it restarts after `delayMs`. */
  onCrash(name: string, exit: Exit, delayMs: number, restarts: number, logTail: string[]): void;
  /** A child (re)started with a new pid. */
  onStart(name: string, pid: number): void;
}

/** Backoff after the n-th consecutive failure: 1 s, 2 s, 4 s … capped at 30 s. */
export const restartDelayMs = (failures: number) => Math.min(30_000, 1_000 * 2 ** Math.max(0, failures - 1));
/** A child that ran this long before failing starts its backoff from the beginning again. */
const HEALTHY_AFTER_MS = 30_000;

interface Running {
  spec: ServiceSpec;
  child: ChildProcess | undefined;
  failures: number;
  restarts: number;
  timer: NodeJS.Timeout | undefined;
}

export class Supervisor {
  readonly #services = new Map<string, Running>();
  readonly #events: SupervisorEvents;
  #stopping = false;

  constructor(events: SupervisorEvents) {
    this.#events = events;
  }

  start(spec: ServiceSpec): void {
    const running: Running = { spec, child: undefined, failures: 0, restarts: 0, timer: undefined };
    this.#services.set(spec.name, running);
    this.#spawn(running);
  }

  pids(): { name: string; pid: number | null; opsUrl: string | null }[] {
    return [...this.#services.values()].map((r) => ({
      name: r.spec.name,
      pid: r.child && isRunning(r.child) ? (r.child.pid ?? null) : null,
      opsUrl: r.spec.opsUrl,
    }));
  }

  /** Stops every child (SIGTERM, SIGKILL after `graceMs`) and cancels pending restarts. */
  async stopAll(graceMs: number): Promise<void> {
    this.#stopping = true;
    await Promise.all(
      [...this.#services.values()].map(async (r) => {
        if (r.timer) clearTimeout(r.timer);
        if (r.child) await stopChild(r.child, graceMs);
      }),
    );
  }

  /** SIGKILL to every child, now. */
  killAll(): void {
    this.#stopping = true;
    for (const r of this.#services.values()) {
      if (r.timer) clearTimeout(r.timer);
      if (r.child && isRunning(r.child)) r.child.kill("SIGKILL");
    }
  }

  #spawn(running: Running): void {
    if (this.#stopping) return;
    const { spec } = running;
    mkdirSync(dirname(spec.logFile), { recursive: true });
    const fd = openSync(spec.logFile, "a");
    const startedAt = Date.now();
    const child = spawnBound(spec.command, spec.args, { cwd: spec.cwd, env: spec.env, stdio: ["ignore", fd, fd] });
    closeSync(fd);
    running.child = child;
    if (child.pid !== undefined) this.#events.onStart(spec.name, child.pid);
    void exitOf(child).then((exit) => {
      if (this.#stopping) return;
      running.failures = Date.now() - startedAt >= HEALTHY_AFTER_MS ? 1 : running.failures + 1;
      running.restarts++;
      const delay = restartDelayMs(running.failures);
      this.#events.onCrash(spec.name, exit, delay, running.restarts, logTail(spec.logFile, 3));
      running.timer = setTimeout(() => this.#spawn(running), delay);
    });
  }
}

export function logTail(file: string, lines: number): string[] {
  if (!existsSync(file)) return [];
  try {
    const text = readFileSync(file, "utf8");
    return text
      .trimEnd()
      .split("\n")
      .slice(-lines)
      .map((line) => readableLogLine(line));
  } catch {
    return [];
  }
}

/** A pino JSON line becomes `level msg (err.message)`; anything else is kept as is. */
function readableLogLine(line: string): string {
  try {
    const value = JSON.parse(line) as { msg?: string; level?: number; err?: { message?: string } };
    if (typeof value.msg === "string") {
      return `${value.msg}${value.err?.message ? ` (${value.err.message})` : ""}`.slice(0, 200);
    }
  } catch {
    // plain text
  }
  return line.slice(0, 200);
}

export { describeExit };
