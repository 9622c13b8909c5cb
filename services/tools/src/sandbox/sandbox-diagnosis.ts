// Why bubblewrap cannot start here, and what to change: the kernel's user-namespace settings, and the
// container runtime's defaults (seccomp, AppArmor, masked /proc) that block it (pure).

/** What the probe read about the host (the files may be absent; then the field is undefined). */
export interface SandboxHost {
  /** Inside a container (`/.dockerenv`, `/run/.containerenv`, or `container=` in the environment). */
  container: boolean;
  /** `/proc/sys/user/max_user_namespaces`. */
  maxUserNamespaces?: number | undefined;
  /** `/proc/sys/kernel/unprivileged_userns_clone` (Debian kernels). */
  unprivilegedUsernsClone?: number | undefined;
  /** `/proc/sys/kernel/apparmor_restrict_unprivileged_userns` (Ubuntu kernels). */
  apparmorRestrictsUserns?: number | undefined;
}

const ON_THE_HOST = "on the host (a container shares the host's kernel settings)";

/** The kernel setting that forbids unprivileged user namespaces, as a reason; undefined when none does. */
export function userNamespaceProblem(host: SandboxHost): string | undefined {
  const where = host.container ? ON_THE_HOST : "";
  if (host.maxUserNamespaces === 0) {
    return `the kernel allows no user namespaces (user.max_user_namespaces = 0): set it above 0 ${where}`.trim();
  }
  if (host.unprivilegedUsernsClone === 0) {
    return `the kernel refuses user namespaces to unprivileged users (kernel.unprivileged_userns_clone = 0): set it to 1 ${where}`.trim();
  }
  return undefined;
}

const IN_A_CONTAINER = {
  seccomp:
    "the container's seccomp profile refuses new namespaces (the default profiles allow them only with CAP_SYS_ADMIN): " +
    "run the tool runner with seccomp unconfined (compose `security_opt: [seccomp=unconfined]`, Kubernetes " +
    "`securityContext.seccompProfile.type: Unconfined`), or a profile that allows clone/unshare of namespaces",
  apparmor:
    "AppArmor refuses the sandbox's mounts (the engine's default profile denies mount): run the tool runner with " +
    "`security_opt: [apparmor=unconfined]` (Kubernetes `securityContext.appArmorProfile.type: Unconfined`)",
  proc:
    "the container's /proc has masked paths, so the kernel refuses a new /proc: run the tool runner with " +
    "`security_opt: [systempaths=unconfined]` (Kubernetes `securityContext.procMount: Unmasked` with `hostUsers: false`)",
};

/**
 * What to change for a failed trial, from bwrap's message (bubblewrap 0.8's wording), or undefined
 * when the message is not one of the known causes. Inside a container the answer names the
 * runtime's setting; outside, the kernel's.
 */
export function explainBwrapFailure(stderr: string, host: SandboxHost): string | undefined {
  const kernel = userNamespaceProblem(host);
  if (/No permissions to create new namespace|Creating new namespace failed|setting up uid map/.test(stderr)) {
    if (kernel) return kernel;
    if (host.apparmorRestrictsUserns === 1) {
      return `AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1): set it to 0 ${host.container ? ON_THE_HOST : ""}, or give bwrap an AppArmor profile with \`userns,\``.trim();
    }
    return host.container
      ? IN_A_CONTAINER.seccomp
      : "the kernel refuses an unprivileged user namespace (check user.max_user_namespaces, kernel.unprivileged_userns_clone and any seccomp or AppArmor confinement of the runner)";
  }
  if (/Can't mount proc/.test(stderr)) {
    return host.container
      ? IN_A_CONTAINER.proc
      : "the kernel refuses a new /proc (is /proc partly covered by other mounts?)";
  }
  if (/Failed to make \/ slave|Permission denied/.test(stderr) && host.container) return IN_A_CONTAINER.apparmor;
  return undefined;
}
