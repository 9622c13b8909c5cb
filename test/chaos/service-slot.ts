// One restartable service instance (a loop worker, tool runner, store or gateway) as a real child process.
// Each start is a new incarnation with its own worker id; exits the suite did not cause are recorded
// and the instance is started again, so the run goes on.
import { join } from "node:path";
import { type ServiceName, type ServiceProcess, spawnService } from "../support/service-process.js";

export interface ServiceSlot {
  /** `loop-0`, `runner-1`, … */
  readonly label: string;
  readonly kind: ServiceName;
  /** The current incarnation's worker / runner id. */
  workerId(): string;
  pid(): number | undefined;
  /** Spawns a new incarnation and resolves once it logged its ready event (retries while NATS is down). */
  start(): Promise<void>;
  /** SIGKILL; resolves after the exit. */
  kill(): Promise<void>;
  pause(): void;
  resume(): void;
  /** SIGCONT + SIGTERM (SIGKILL after 15 s); no restart afterwards. */
  stop(): Promise<void>;
  /** SIGKILL now; resolves after the exit (at most 3 s); no restart afterwards. */
  abort(): Promise<void>;
  /** One line per exit the suite did not cause. */
  readonly unexpectedExits: string[];
}

const START_ATTEMPTS = 5;

export function createServiceSlot(
  kind: ServiceName,
  index: number,
  envOf: (workerId: string) => Record<string, string>,
  log: (line: string) => void,
  /** A directory where each incarnation's output is kept, as `<label>.log`. */
  logDir?: string,
): ServiceSlot {
  const label = `${kind === "tools" ? "runner" : kind}-${index}`;
  let incarnation = 0;
  let current: ServiceProcess | undefined;
  let expectExit = false;
  let stopped = false;
  let paused = false;
  const unexpectedExits: string[] = [];
  const id = () => `${label}-${incarnation}`;

  const spawnOnce = (): ServiceProcess => {
    incarnation++;
    const proc = spawnService(kind, envOf(id()), logDir === undefined ? undefined : join(logDir, `${id()}.log`));
    const started = Date.now();
    proc.proc.once("exit", (code, signal) => {
      if (expectExit || stopped || current !== proc) return;
      const tail = proc.output().trim().split("\n").slice(-3).join(" | ").slice(0, 600);
      unexpectedExits.push(`${id()} exited (code ${code}, signal ${signal}) after ${Date.now() - started} ms: ${tail}`);
      log(`! ${id()} exited unexpectedly (code ${code}); restarting`);
      setTimeout(() => void slot.start().catch((err) => log(`! ${label} restart failed: ${String(err)}`)), 1_000);
    });
    return proc;
  };

  const slot: ServiceSlot = {
    label,
    kind,
    workerId: id,
    pid: () => current?.proc.pid,
    async start() {
      if (stopped) return;
      for (let attempt = 1; ; attempt++) {
        expectExit = true; // an incarnation that fails to start is retried here, not counted
        current = spawnOnce();
        try {
          await current.waitForLog(undefined, 60_000);
          expectExit = false;
          return;
        } catch (err) {
          await current.stop();
          if (attempt >= START_ATTEMPTS || stopped) {
            expectExit = false;
            throw err;
          }
          await new Promise((r) => setTimeout(r, 1_000));
        }
      }
    },
    async kill() {
      const proc = current;
      if (!proc || proc.proc.exitCode !== null || proc.proc.signalCode !== null) return;
      expectExit = true;
      const exited = new Promise<void>((resolve) => proc.proc.once("exit", () => resolve()));
      proc.proc.kill("SIGKILL");
      await exited;
    },
    pause() {
      paused = true;
      current?.proc.kill("SIGSTOP");
    },
    resume() {
      paused = false;
      current?.proc.kill("SIGCONT");
    },
    async stop() {
      stopped = true;
      if (paused) slot.resume();
      await current?.stop();
    },
    async abort() {
      stopped = true;
      const proc = current?.proc;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
      proc.kill("SIGKILL");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))]);
    },
    unexpectedExits,
  };
  return slot;
}
