// Spawns a server binary, waits for its readiness log line, and stops it by PID.

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { trackResource } from "./cleanup-registry.js";

const SETPRIV = "/usr/bin/setpriv";
const MAX_LOG_CHARS = 256 * 1024;

/** What to spawn and how to know it is ready. */
export interface ManagedProcessSpec {
  /** Used in error messages and in `listRunningServers()`. */
  readonly label: string;
  readonly binary: string;
  readonly args: readonly string[];
  /** Matched against the combined stdout+stderr text seen so far. */
  readonly readyPattern: RegExp;
  readonly startTimeoutMs: number;
  /** Extra environment variables (added to this process's environment). */
  readonly env?: Readonly<Record<string, string>>;
}

/** How the process ended. nats-server exits with code 1 on SIGTERM, which is normal. */
export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A running child process. */
export interface ManagedProcess {
  readonly pid: number;
  /** Resolves once the process has exited (never rejects). */
  readonly exited: Promise<ExitInfo>;
  /** False once the process has exited. */
  readonly isRunning: boolean;
  /** The combined stdout+stderr output (the last 256 KiB). */
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves after the exit. Idempotent. */
  stop(graceMs?: number): Promise<void>;
  /** Sends `signal` (default SIGKILL) and resolves after the exit. Idempotent. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Spawns `spec.binary` and resolves once `spec.readyPattern` appears in its output.
 * Contract: on Linux the child gets PR_SET_PDEATHSIG=SIGKILL (via util-linux `setpriv`), so it dies with the
 * spawning thread even on SIGKILL of the test process. Rejects (after killing the child) when the process
 * exits early or the timeout passes; the error message carries the log tail.
 */
export function spawnManaged(spec: ManagedProcessSpec): Promise<ManagedProcess> {
  const usePdeathsig = process.platform === "linux" && existsSync(SETPRIV);
  const [command, args] = usePdeathsig
    ? [SETPRIV, ["--pdeathsig", "KILL", "--", spec.binary, ...spec.args]]
    : [spec.binary, [...spec.args]];
  const child = spawn(command, args, {
    stdio: ["ignore", "pipe", "pipe"],
    ...(spec.env ? { env: { ...process.env, ...spec.env } } : {}),
  });

  let log = "";
  const append = (chunk: Buffer): void => {
    log += chunk.toString("utf8");
    if (log.length > MAX_LOG_CHARS) log = log.slice(-MAX_LOG_CHARS);
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);

  const exited = new Promise<ExitInfo>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", () => resolve({ code: null, signal: null }));
  });

  let untrack = (): void => {};
  const isRunning = (): boolean => child.exitCode === null && child.signalCode === null;
  const signalChild = (signal: NodeJS.Signals): void => {
    if (isRunning()) child.kill(signal);
  };
  const stop = async (graceMs = 3000): Promise<void> => {
    if (isRunning()) {
      signalChild("SIGTERM");
      const timer = setTimeout(() => signalChild("SIGKILL"), graceMs);
      timer.unref();
      await exited;
      clearTimeout(timer);
    }
    await exited;
    untrack();
  };
  const kill = async (signal: NodeJS.Signals = "SIGKILL"): Promise<void> => {
    signalChild(signal);
    await exited;
    untrack();
  };

  return new Promise<ManagedProcess>((resolve, reject) => {
    let settled = false;
    const fail = (reason: string): void => {
      if (settled) return;
      settled = true;
      cleanupWait();
      signalChild("SIGKILL");
      untrack();
      reject(new Error(`${spec.label}: ${reason}\n--- output ---\n${log.slice(-4000)}`));
    };
    const onData = (): void => {
      if (settled || !spec.readyPattern.test(log)) return;
      settled = true;
      cleanupWait();
      resolve({
        pid: child.pid ?? -1,
        exited,
        get isRunning() {
          return isRunning();
        },
        output: () => log,
        stop,
        kill,
      });
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void =>
      fail(`exited before it was ready (code ${code}, signal ${signal})`);
    const onError = (error: Error): void => fail(`failed to spawn ${spec.binary}: ${error.message}`);
    const timer = setTimeout(() => fail(`not ready after ${spec.startTimeoutMs} ms`), spec.startTimeoutMs);
    timer.unref();
    const cleanupWait = (): void => {
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      child.stderr?.off("data", onData);
      child.off("exit", onExit);
      child.off("error", onError);
    };

    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", onExit);
    child.once("error", onError);
    if (child.pid !== undefined) {
      untrack = trackResource(describe(spec.label, child, stop));
    }
  });
}

function describe(label: string, child: ChildProcess, stop: () => Promise<void>) {
  return {
    label: `${label} pid ${child.pid}`,
    killSync: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
    stop,
  };
}
