import { describe, expect, it } from "vitest";
import { locatePidsCgroup } from "./pids-cgroup.js";

const HYBRID_MOUNTS = [
  "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
  "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
  "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids",
  "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
].join("\n");

describe("locatePidsCgroup", () => {
  it("v1 (hybrid): the pids hierarchy, at this process's path in it", () => {
    const cgroup = "8:pids:/runner/a\n4:memory:/x\n0::/\n";
    expect(locatePidsCgroup(cgroup, HYBRID_MOUNTS)).toEqual({
      ok: true,
      version: 1,
      dir: "/sys/fs/cgroup/pids/runner/a",
    });
  });

  it("v1 mounted at a sub-root (a container): the path is taken below the mount's root", () => {
    const mounts = "39 31 0:36 /docker/abc /sys/fs/cgroup/pids ro,nosuid - cgroup cgroup rw,pids";
    expect(locatePidsCgroup("5:pids:/docker/abc\n", mounts)).toEqual({
      ok: true,
      version: 1,
      dir: "/sys/fs/cgroup/pids",
    });
    expect(locatePidsCgroup("5:pids:/elsewhere\n", mounts)).toMatchObject({ ok: false });
  });

  it("v2 only: the unified hierarchy", () => {
    const mounts = "30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate";
    expect(locatePidsCgroup("0::/system.slice/fleet.service\n", mounts)).toEqual({
      ok: true,
      version: 2,
      dir: "/sys/fs/cgroup/system.slice/fleet.service",
    });
  });

  it("no pids controller anywhere", () => {
    expect(locatePidsCgroup("4:memory:/x\n", HYBRID_MOUNTS.split("\n").slice(0, 2).join("\n"))).toEqual({
      ok: false,
      reason: "no pids controller: neither a v1 pids hierarchy nor a mounted cgroup2",
    });
  });
});
