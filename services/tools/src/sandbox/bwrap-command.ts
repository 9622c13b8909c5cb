// The bubblewrap command line of one sandboxed process (pure).
import type { SandboxLimits, SandboxSettings } from "./sandbox-settings.js";

/** A top-level system path of the host: a real directory, or a merged-/usr symlink (`/bin -> usr/bin`). */
export type RootEntry = { path: string; kind: "dir" } | { path: string; kind: "symlink"; target: string };

/** Top-level paths looked at on the host and reproduced read-only (those that exist). */
export const SYSTEM_ROOT_PATHS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] as const;

/**
 * The only parts of /etc a sandboxed process sees (read-only, where they exist): name service,
 * dynamic linker, TLS roots, time zone, shell start-up and Debian's alternatives. Nothing that holds
 * credentials (shadow, npmrc, ssh, service configs).
 */
export const ETC_PATHS = [
  "/etc/alternatives",
  "/etc/passwd",
  "/etc/group",
  "/etc/nsswitch.conf",
  "/etc/hosts",
  "/etc/host.conf",
  "/etc/resolv.conf",
  "/etc/gai.conf",
  "/etc/services",
  "/etc/protocols",
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/localtime",
  "/etc/timezone",
  "/etc/ssl",
  "/etc/ca-certificates",
  "/etc/ca-certificates.conf",
  "/etc/pki",
  "/etc/mime.types",
  "/etc/magic",
  "/etc/magic.mime",
  "/etc/bash.bashrc",
  "/etc/profile",
  "/etc/inputrc",
  "/etc/locale.alias",
  "/etc/terminfo",
  "/etc/gitconfig",
  "/etc/os-release",
  "/etc/debian_version",
] as const;

export interface SandboxCall {
  /** The command and its arguments, run inside the sandbox (absolute path or found on the sandbox's PATH). */
  argv: readonly string[];
  /** Absolute real path of the workspace: bound read-write at the same path, the working directory. */
  workspace: string;
  /** File descriptor bwrap writes its `{"child-pid": …}` JSON to. */
  infoFd?: number;
}

/** `prlimit` arguments that set every limit (soft = hard, except CPU: SIGXCPU one second before SIGKILL). */
export function prlimitArgs(prlimitPath: string, limits: SandboxLimits): string[] {
  return [
    prlimitPath,
    `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    `--as=${limits.memoryBytes}`,
    `--fsize=${limits.fileBytes}`,
    `--nproc=${limits.processes}`,
    "--core=0",
    "--",
  ];
}

/**
 * bwrap's arguments (bubblewrap >= 0.8): new user, mount, PID, network, IPC, UTS and cgroup
 * namespaces, no nested user namespaces, no capabilities, `/usr` and the system paths read-only, a private /tmp, /proc and minimal /dev, the
 * workspace as the only writable bind, the root read-only, and the command under `prlimit`.
 * Killing bwrap ends everything inside (`--die-with-parent`, PID namespace).
 */
export function bwrapArgs(settings: SandboxSettings, root: readonly RootEntry[], call: SandboxCall): string[] {
  // --unshare-all only tries a user namespace; --unshare-user makes it required (for --disable-userns).
  const args = ["--unshare-all", "--unshare-user", "--disable-userns"];
  if (settings.network === "allow") args.push("--share-net");
  // Root in the sandbox's user namespace keeps every capability there unless dropped, and could
  // then remount the read-only binds read-write.
  args.push("--die-with-parent", "--new-session", "--cap-drop", "ALL");
  args.push("--ro-bind", "/usr", "/usr");
  for (const entry of root) {
    if (entry.kind === "symlink") args.push("--symlink", entry.target, entry.path);
    else args.push("--ro-bind", entry.path, entry.path);
  }
  for (const path of ETC_PATHS) args.push("--ro-bind-try", path, path);
  args.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  for (const path of settings.readOnlyPaths) args.push("--ro-bind-try", path, path);
  args.push("--bind", call.workspace, call.workspace, "--chdir", call.workspace);
  args.push("--remount-ro", "/");
  if (call.infoFd !== undefined) args.push("--info-fd", String(call.infoFd));
  args.push("--", ...prlimitArgs(settings.prlimitPath, settings.limits), ...call.argv);
  return args;
}

/** The whole environment of a tool's process: the settings' variables, HOME and PWD = the workspace. */
export function sandboxEnv(
  settings: Pick<SandboxSettings, "env">,
  workspace: string,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return { ...settings.env, ...extra, HOME: workspace, PWD: workspace };
}
