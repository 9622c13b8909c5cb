// The start-up probe: decides once per settings whether tools can start processes, and how.
import { accessSync, constants, existsSync, lstatSync, readFileSync, readlinkSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RootEntry, SYSTEM_ROOT_PATHS } from "./bwrap-command.js";
import { openPidsCgroup, type PidsCgroupFactory } from "./pids-cgroup.js";
import {
  createBwrapSandbox,
  createUnavailableSandbox,
  createUnconfinedSandbox,
  type ProcessSandbox,
} from "./process-sandbox.js";
import { explainBwrapFailure, type SandboxHost, userNamespaceProblem } from "./sandbox-diagnosis.js";
import { DEFAULT_SANDBOX_SETTINGS, type SandboxSettings } from "./sandbox-settings.js";

const opened = new Map<string, Promise<ProcessSandbox>>();

/**
 * The sandbox for `settings`, probed on first use and cached for the life of the process (every
 * runner of the process shares the result). Never rejects: a failed probe gives a sandbox whose
 * status names the failed check, and whose `start` refuses with that reason.
 */
export function openSandbox(settings: SandboxSettings = DEFAULT_SANDBOX_SETTINGS): Promise<ProcessSandbox> {
  const key = JSON.stringify(settings);
  let sandbox = opened.get(key);
  if (!sandbox) {
    sandbox = probeSandbox(settings);
    opened.set(key, sandbox);
  }
  return sandbox;
}

const isExecutable = (path: string) => {
  try {
    accessSync(path, constants.X_OK);
    return lstatSync(path).isFile() || lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
};

/** The host's top-level system paths, as `bwrapArgs` reproduces them. */
function describeRoot(): RootEntry[] {
  const entries: RootEntry[] = [];
  for (const path of SYSTEM_ROOT_PATHS) {
    try {
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) entries.push({ path, kind: "symlink", target: readlinkSync(path) });
      else if (stat.isDirectory()) entries.push({ path, kind: "dir" });
    } catch {
      // Absent on this host.
    }
  }
  return entries;
}

/** A number from a /proc/sys file, or undefined when it cannot be read. */
function sysctl(path: string): number | undefined {
  try {
    const value = Number(readFileSync(path, "utf8").trim());
    return Number.isFinite(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** What the diagnosis needs to know about this host. */
function readHost(): SandboxHost {
  return {
    container: existsSync("/.dockerenv") || existsSync("/run/.containerenv") || process.env.container !== undefined,
    maxUserNamespaces: sysctl("/proc/sys/user/max_user_namespaces"),
    unprivilegedUsernsClone: sysctl("/proc/sys/kernel/unprivileged_userns_clone"),
    apparmorRestrictsUserns: sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
  };
}

/**
 * Checks, in order: Linux; bwrap and prlimit are executable files; a process limit that the kernel
 * enforces (RLIMIT_NPROC in a user namespace for an unprivileged runner; a writable pids cgroup
 * for root, which RLIMIT_NPROC never stops); kernel settings that allow unprivileged user
 * namespaces; and a trial command that must exit 0 within 10 s. A failed trial's reason says what
 * to change when bwrap's message is a known cause (in a container: the runtime's seccomp, AppArmor
 * or masked /proc).
 */
async function probeSandbox(settings: SandboxSettings): Promise<ProcessSandbox> {
  if (settings.mode === "off") return createUnconfinedSandbox(settings);
  if (process.platform !== "linux") {
    return createUnavailableSandbox("platform", `bubblewrap needs Linux; this is ${process.platform}`);
  }
  if (!isExecutable(settings.bwrapPath)) {
    return createUnavailableSandbox("bwrap", `${settings.bwrapPath} is not an executable file`);
  }
  if (!isExecutable(settings.prlimitPath)) {
    return createUnavailableSandbox("prlimit", `${settings.prlimitPath} (util-linux) is not an executable file`);
  }
  let cgroups: PidsCgroupFactory | undefined;
  if (process.getuid?.() === 0) {
    const cgroup = await openPidsCgroup();
    if (!cgroup.ok) {
      return createUnavailableSandbox(
        "process-limit",
        `the runner is root, for which the kernel ignores RLIMIT_NPROC, and ${cgroup.reason}; ` +
          "run the runner as an unprivileged user or give it a writable pids cgroup",
      );
    }
    cgroups = cgroup.factory;
  }
  const host = readHost();
  const userns = userNamespaceProblem(host);
  if (userns) return createUnavailableSandbox("user-namespaces", userns);
  const sandbox = createBwrapSandbox(settings, describeRoot(), cgroups);
  const trial = await runTrial(sandbox);
  if (trial === undefined) return sandbox;
  const fix = explainBwrapFailure(trial, host);
  return createUnavailableSandbox("bwrap-start", fix ? `${trial}; ${fix}` : trial);
}

/** Runs `/bin/sh -c 'exit 0'` in the sandbox in a scratch workspace; the failure, or undefined. */
async function runTrial(sandbox: ProcessSandbox): Promise<string | undefined> {
  const workspace = await realpath(await mkdtemp(join(tmpdir(), "fleet-sandbox-probe-")));
  try {
    const started = await sandbox.start(["/bin/sh", "-c", "exit 0"], { workspace });
    if (!started.ok) return started.error;
    const { child } = started.process;
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString("utf-8");
    });
    child.stdout?.resume();
    const outcome = await new Promise<string | undefined>((resolve) => {
      const timer = setTimeout(() => resolve("the trial command did not finish within 10 s"), 10_000);
      child.once("error", (err) => {
        clearTimeout(timer);
        resolve(err.message);
      });
      child.once("close", (code, signal) => {
        clearTimeout(timer);
        resolve(code === 0 ? undefined : `the trial command failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`);
      });
    });
    await started.process.kill(0);
    await started.process.release();
    return outcome;
  } finally {
    await rm(workspace, { recursive: true, force: true });
  }
}
