// Starting a tool's process inside the sandbox (or, with FLEET_SANDBOX=off, unconfined), and
// ending every process it started.
import { type ChildProcess, spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { isGroupAlive, isProcessAlive, killProcessGroup } from "../builtin/process-group.js";
import { bwrapArgs, type RootEntry, sandboxEnv } from "./bwrap-command.js";
import type { PidsCgroupFactory } from "./pids-cgroup.js";
import type { SandboxLimits, SandboxSettings } from "./sandbox-settings.js";

/** The named checks of the start-up probe. */
export type SandboxCheck = "platform" | "bwrap" | "prlimit" | "process-limit" | "user-namespaces" | "bwrap-start";

export type SandboxStatus =
  | {
      mode: "bwrap";
      network: "deny" | "allow";
      limits: SandboxLimits;
      /** How the process limit is enforced: RLIMIT_NPROC counted in the sandbox's user namespace, or a pids cgroup (root). */
      processLimit: "rlimit-userns" | "pids-cgroup-v1" | "pids-cgroup-v2";
    }
  | { mode: "off" }
  | { mode: "unavailable"; check: SandboxCheck; reason: string };

/** A started command: its main process and everything it starts. */
export interface SandboxedProcess {
  /** The process Node started (bwrap, or the command itself when the sandbox is off); stdout and stderr are pipes. */
  readonly child: ChildProcess;
  /** True while any process of the command is alive (the main one, its children, background jobs). */
  anyAlive(): boolean;
  /**
   * Ends every process of the command: SIGTERM, SIGKILL after `graceMs` to what is left.
   * Sandboxed, SIGTERM to bwrap already ends everything inside (the kernel kills a PID namespace
   * whose first process dies). Resolves once all are gone (bounded wait). Never throws.
   */
  kill(graceMs: number): Promise<void>;
  /** Frees what the command held (its cgroup) once its processes are gone. Never throws. */
  release(): Promise<void>;
  /** Why the sandbox itself stopped the command (the workspace quota), if it did. */
  stopReason?(): string | undefined;
}

/** What one start may change: tighter limits than the sandbox's own (the workspace quota's room). */
export interface SandboxStartOptions {
  workspace: string;
  env?: Readonly<Record<string, string>>;
  limits?: Partial<SandboxLimits>;
  /** `pipe`: the process reads a pipe (`child.stdin`), as an MCP server over stdio does. Default: no input. */
  stdin?: "pipe";
  /** `allow`: this process shares the runner's network even when the sandbox denies it (an MCP server whose entry says so). */
  network?: "allow";
  /** Host paths bound read-only for this process, besides the sandbox's own (an MCP server's code). */
  readOnlyPaths?: readonly string[];
}

export type SandboxStart = { ok: true; process: SandboxedProcess } | { ok: false; error: string };

/** How tools start processes. Every process a tool starts goes through `start`. */
export interface ProcessSandbox {
  readonly status: SandboxStatus;
  /**
   * Starts `argv` with the workspace as working directory and an environment of only the sandbox's
   * variables (plus `env`). `ok: false` when the sandbox is unavailable or the command's cgroup
   * cannot be made; spawn failures surface as the child's `error` event.
   */
  start(argv: readonly string[], opts: SandboxStartOptions): Promise<SandboxStart>;
}

/** Each limit of `base`, lowered where `patch` asks for less. */
export function tighterLimits(base: SandboxLimits, patch: Partial<SandboxLimits> | undefined): SandboxLimits {
  if (!patch) return base;
  const pick = (key: keyof SandboxLimits) => Math.min(base[key], patch[key] ?? base[key]);
  return {
    cpuSeconds: pick("cpuSeconds"),
    memoryBytes: pick("memoryBytes"),
    fileBytes: pick("fileBytes"),
    processes: pick("processes"),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The error text of a tool that needs a process while the sandbox is unavailable. */
export function sandboxUnavailableText(status: { check: SandboxCheck; reason: string }): string {
  return (
    `the process sandbox is unavailable (check ${status.check}: ${status.reason}). ` +
    "Install bubblewrap (apt-get install bubblewrap), or set FLEET_SANDBOX=off on the tool runner to run processes without a sandbox."
  );
}

export function createUnavailableSandbox(check: SandboxCheck, reason: string): ProcessSandbox {
  const status = { mode: "unavailable" as const, check, reason };
  return {
    status,
    start: async () => ({ ok: false, error: sandboxUnavailableText(status) }),
  };
}

/** FLEET_SANDBOX=off: the command runs as the runner's user, in its own process group, with the sandbox's environment. */
export function createUnconfinedSandbox(settings: SandboxSettings): ProcessSandbox {
  return {
    status: { mode: "off" },
    async start(argv, opts) {
      const [file = "", ...args] = argv;
      const child = spawn(file, args, {
        cwd: opts.workspace,
        detached: true,
        env: sandboxEnv(settings, opts.workspace, opts.env),
        stdio: [opts.stdin ?? "ignore", "pipe", "pipe"],
      });
      const pgid = child.pid;
      const anyAlive = () => pgid !== undefined && isGroupAlive(pgid);
      return {
        ok: true,
        process: {
          child,
          anyAlive,
          kill: (graceMs) => (pgid === undefined ? Promise.resolve() : killProcessGroup(pgid, graceMs)),
          release: async () => undefined,
        },
      };
    },
  };
}

/**
 * bubblewrap (see `bwrapArgs`). With `cgroups` (root runners) each command runs in its own pids
 * cgroup, entered by a `sh` wrapper before it execs bwrap, so no process of it can start outside.
 */
export function createBwrapSandbox(
  settings: SandboxSettings,
  root: readonly RootEntry[],
  cgroups: PidsCgroupFactory | undefined,
): ProcessSandbox {
  return {
    status: {
      mode: "bwrap",
      network: settings.network,
      limits: settings.limits,
      processLimit: cgroups ? `pids-cgroup-v${cgroups.version}` : "rlimit-userns",
    },
    async start(argv, opts) {
      let cgroup: Awaited<ReturnType<PidsCgroupFactory["create"]>> | undefined;
      try {
        // bwrap's two processes (monitor and PID 1) besides the command's own.
        cgroup = cgroups ? await cgroups.create(settings.limits.processes + 2) : undefined;
      } catch (err) {
        return { ok: false, error: `cannot create the command's pids cgroup: ${(err as Error).message}` };
      }
      const limits = tighterLimits(settings.limits, opts.limits);
      const call = {
        ...settings,
        limits,
        network: opts.network ?? settings.network,
        readOnlyPaths: [...settings.readOnlyPaths, ...(opts.readOnlyPaths ?? [])],
      };
      const args = bwrapArgs(call, root, { argv, workspace: opts.workspace, infoFd: 3 });
      const [file, fileArgs] = cgroup
        ? ["/bin/sh", ["-c", 'echo $$ > "$0" && exec "$@"', cgroup.procsFile, settings.bwrapPath, ...args]]
        : [settings.bwrapPath, args];
      const child = spawn(file, fileArgs, {
        cwd: opts.workspace,
        detached: true,
        env: sandboxEnv(settings, opts.workspace, opts.env),
        stdio: [opts.stdin ?? "ignore", "pipe", "pipe", "pipe"],
      });
      const pgid = child.pid;
      // bwrap reports the host pid of the sandbox's PID 1: once it is gone, so is every process inside.
      let initPid: number | undefined;
      let info = "";
      const infoPipe = child.stdio[3] as Readable | null;
      infoPipe?.on("data", (chunk: Buffer) => {
        info += chunk.toString("utf-8");
        const match = /"child-pid"\s*:\s*(\d+)/.exec(info);
        if (match) initPid = Number(match[1]);
      });
      infoPipe?.on("error", () => undefined);
      const exited = () => child.exitCode !== null || child.signalCode !== null;
      // bwrap's group holds bwrap and the sandbox's PID 1 (the command has its own session). Once
      // bwrap exited and PID 1 is gone, nothing is left: no need to scan /proc for the group.
      const anyAlive = () =>
        (cgroup !== undefined && !cgroup.isEmpty()) ||
        (initPid !== undefined && isProcessAlive(initPid)) ||
        (exited() && initPid !== undefined ? false : pgid !== undefined && isGroupAlive(pgid));
      let killing: Promise<void> | undefined;
      const kill = (graceMs: number) => {
        killing ??= (async () => {
          if (pgid !== undefined) await killProcessGroup(pgid, graceMs);
          if (initPid !== undefined && isProcessAlive(initPid)) {
            try {
              process.kill(initPid, "SIGKILL");
            } catch {
              // Already gone.
            }
          }
          const end = Date.now() + 2_000;
          while (anyAlive() && Date.now() < end) await sleep(10);
        })();
        return killing;
      };
      return {
        ok: true,
        process: { child, anyAlive, kill, release: async () => cgroup?.remove() },
      };
    },
  };
}
