/** Resource limits of every sandboxed process (set with `prlimit` inside the sandbox). */
export interface SandboxLimits {
  /** RLIMIT_CPU: CPU seconds per process (SIGXCPU, then SIGKILL one second later). */
  cpuSeconds: number;
  /** RLIMIT_AS: address space per process, in bytes (allocations beyond it fail). */
  memoryBytes: number;
  /** RLIMIT_FSIZE: largest file a process may write, in bytes (SIGXFSZ). */
  fileBytes: number;
  /**
   * Processes (and threads) of one command at once: RLIMIT_NPROC in the sandbox's own user
   * namespace, plus `pids.max` of a per-command pids cgroup when the runner is root (root ignores
   * RLIMIT_NPROC).
   */
  processes: number;
}

/** How the processes that tools start are confined. Pure data. */
export interface SandboxSettings {
  /** `bwrap` (default): bubblewrap. `off` (FLEET_SANDBOX=off): processes run unconfined. */
  mode: "bwrap" | "off";
  /** `deny` (default): a network namespace with only its own loopback. */
  network: "deny" | "allow";
  bwrapPath: string;
  /** util-linux `prlimit`; runs inside the sandbox, so it must lie under a bound directory (`/usr`). */
  prlimitPath: string;
  limits: SandboxLimits;
  /** Extra host paths bound read-only at the same place (a toolchain outside /usr, say). */
  readOnlyPaths: readonly string[];
  /** The whole environment of a sandboxed process, besides HOME and PWD (the workspace). */
  env: Readonly<Record<string, string>>;
}

const MiB = 1024 * 1024;

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = Object.freeze({
  cpuSeconds: 300,
  memoryBytes: 4096 * MiB,
  fileBytes: 1024 * MiB,
  processes: 256,
});

/** What a sandboxed process sees unless the runner passes more (FLEET_SANDBOX_ENV). */
export const DEFAULT_SANDBOX_ENV: Readonly<Record<string, string>> = Object.freeze({
  PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  LANG: "C.UTF-8",
  TERM: "dumb",
  TMPDIR: "/tmp",
});

export const DEFAULT_SANDBOX_SETTINGS: SandboxSettings = Object.freeze({
  mode: "bwrap",
  network: "deny",
  bwrapPath: "/usr/bin/bwrap",
  prlimitPath: "/usr/bin/prlimit",
  limits: DEFAULT_SANDBOX_LIMITS,
  readOnlyPaths: [],
  env: DEFAULT_SANDBOX_ENV,
});

/** Settings with some fields replaced (`limits` merged field by field). */
export function sandboxSettings(
  patch: Partial<Omit<SandboxSettings, "limits">> & { limits?: Partial<SandboxLimits> } = {},
): SandboxSettings {
  return {
    ...DEFAULT_SANDBOX_SETTINGS,
    ...patch,
    limits: { ...DEFAULT_SANDBOX_LIMITS, ...patch.limits },
  };
}

/** The environment variables that configure the sandbox (a subset of `ToolsEnv`). */
export interface SandboxEnvConfig {
  FLEET_SANDBOX: "on" | "off";
  FLEET_SANDBOX_NETWORK: "deny" | "allow";
  FLEET_SANDBOX_BWRAP: string;
  FLEET_SANDBOX_CPU_SECONDS: number;
  FLEET_SANDBOX_MEMORY_MB: number;
  FLEET_SANDBOX_FILE_MB: number;
  FLEET_SANDBOX_MAX_PROCS: number;
  FLEET_SANDBOX_RO_PATHS: string;
  FLEET_SANDBOX_ENV: string;
}

const list = (s: string) =>
  s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);

/**
 * Settings from the runner's configuration. `runnerEnv` is read only for the names listed in
 * FLEET_SANDBOX_ENV: nothing else of the runner's environment reaches a tool's processes.
 */
export function sandboxSettingsFromEnv(
  config: SandboxEnvConfig,
  runnerEnv: Readonly<Record<string, string | undefined>>,
): SandboxSettings {
  const passed: Record<string, string> = {};
  for (const name of list(config.FLEET_SANDBOX_ENV)) {
    const value = runnerEnv[name];
    if (value !== undefined) passed[name] = value;
  }
  return sandboxSettings({
    mode: config.FLEET_SANDBOX === "off" ? "off" : "bwrap",
    network: config.FLEET_SANDBOX_NETWORK,
    bwrapPath: config.FLEET_SANDBOX_BWRAP,
    limits: {
      cpuSeconds: config.FLEET_SANDBOX_CPU_SECONDS,
      memoryBytes: config.FLEET_SANDBOX_MEMORY_MB * MiB,
      fileBytes: config.FLEET_SANDBOX_FILE_MB * MiB,
      processes: config.FLEET_SANDBOX_MAX_PROCS,
    },
    readOnlyPaths: list(config.FLEET_SANDBOX_RO_PATHS),
    env: { ...DEFAULT_SANDBOX_ENV, ...passed },
  });
}
