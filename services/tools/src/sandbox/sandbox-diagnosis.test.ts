import { describe, expect, it } from "vitest";
import { explainBwrapFailure, userNamespaceProblem } from "./sandbox-diagnosis.js";

// bubblewrap 0.8.0's own messages (strings /usr/bin/bwrap).
const NO_USERNS =
  "bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces. See <https://deb.li/bubblewrap> or <file:///usr/share/doc/bubblewrap/README.Debian.gz>.";
const NO_PROC = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted";
const NO_SLAVE = "bwrap: Failed to make / slave: Permission denied";

describe("sandbox / diagnosis", () => {
  it("names the kernel setting that forbids user namespaces, and where to change it", () => {
    expect(userNamespaceProblem({ container: false, maxUserNamespaces: 0 })).toBe(
      "the kernel allows no user namespaces (user.max_user_namespaces = 0): set it above 0",
    );
    expect(userNamespaceProblem({ container: true, maxUserNamespaces: 100, unprivilegedUsernsClone: 0 })).toMatch(
      /kernel.unprivileged_userns_clone = 0\): set it to 1 on the host/,
    );
    expect(userNamespaceProblem({ container: true, maxUserNamespaces: 100, unprivilegedUsernsClone: 1 })).toBe(
      undefined,
    );
  });

  it("tells a container which runtime default blocks bwrap", () => {
    const container = { container: true, maxUserNamespaces: 100 };
    expect(explainBwrapFailure(NO_USERNS, container)).toMatch(
      /seccomp profile refuses new namespaces.*seccomp=unconfined/,
    );
    expect(explainBwrapFailure(NO_PROC, container)).toMatch(
      /masked paths.*systempaths=unconfined.*procMount: Unmasked/,
    );
    expect(explainBwrapFailure(NO_SLAVE, container)).toMatch(
      /AppArmor refuses the sandbox's mounts.*apparmor=unconfined/,
    );
    expect(explainBwrapFailure(NO_USERNS, { ...container, apparmorRestrictsUserns: 1 })).toMatch(
      /apparmor_restrict_unprivileged_userns = 1\): set it to 0 on the host/,
    );
    expect(explainBwrapFailure("bwrap: execvp /bin/sh: No such file or directory", container)).toBe(undefined);
    expect(explainBwrapFailure(NO_USERNS, { container: false })).toMatch(
      /kernel refuses an unprivileged user namespace/,
    );
  });
});
