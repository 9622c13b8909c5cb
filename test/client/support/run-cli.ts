// Runs the `fleet` bin as a child process, with colours off: from its build and starting the services
// from theirs, or from the TypeScript sources with FLEET_TEST_FROM_SOURCE=1 (../../support/node-entry.ts).
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { FROM_SOURCE } from "../../support/node-entry.js";

export const FLEET_BIN = fileURLToPath(new URL("../../../libs/client/bin/fleet.js", import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI child: the parent's, minus URLs that would point it at other servers. */
export function cliEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    FLEET_FROM_SOURCE: FROM_SOURCE ? "1" : "0",
    NO_COLOR: "1",
    FORCE_COLOR: "0",
  };
  for (const key of [
    "NATS_URL",
    "REDIS_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "FLEET_PROVIDER",
    "FLEET_SCRIPT",
    "NATS_CREDS",
    "NATS_NKEY",
    "NATS_USER",
    "NATS_PASSWORD",
    "NATS_TOKEN",
    "NATS_TLS_CA",
    "NATS_TLS_CERT",
    "NATS_TLS_KEY",
  ]) {
    delete env[key];
  }
  return { ...env, ...extra };
}

/** CLI children spawned that have not exited: a failed test's `fleet up` must not outlive its file. */
const running = new Set<ChildProcess>();

export function spawnCli(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): ChildProcess {
  const child = spawn(process.execPath, [FLEET_BIN, ...args], {
    env: cliEnv(opts.env),
    cwd: opts.cwd ?? process.cwd(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  child.once("exit", () => running.delete(child));
  child.once("error", () => running.delete(child));
  return child;
}

/**
 * Stops every CLI child still running and resolves once each exited: SIGTERM (a `fleet up` stops its
 * services and servers), then SIGKILL after `graceMs` (its children die with it: PR_SET_PDEATHSIG).
 * For a file's `afterAll`, before its directory goes: after a passing test there is nothing to stop.
 */
export async function stopClis(graceMs = 30_000): Promise<void> {
  await Promise.all(
    [...running].map(async (child) => {
      const exited = new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.once("error", () => resolve());
      });
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    }),
  );
}

/** Runs to completion (killed with SIGKILL after `timeoutMs`). */
export function runCli(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  const child = spawnCli(args, opts);
  return collect(child, opts.timeoutMs ?? 30_000);
}

export function collect(child: ChildProcess, timeoutMs: number): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => {
    stdout += d.toString("utf8");
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString("utf8");
  });
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Resolves with the output so far once `pattern` appears in stdout+stderr; rejects after `timeoutMs`. */
export function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  let seen = "";
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      seen += d.toString("utf8");
      if (pattern.test(seen)) finish(() => resolve(seen));
    };
    const onExit = () => finish(() => reject(new Error(`exited before ${pattern}:\n${seen}`)));
    const timer = setTimeout(
      () => finish(() => reject(new Error(`timed out waiting for ${pattern}:\n${seen}`))),
      timeoutMs,
    );
    const finish = (then: () => void) => {
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      child.stderr?.off("data", onData);
      child.off("exit", onExit);
      then();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", onExit);
  });
}
