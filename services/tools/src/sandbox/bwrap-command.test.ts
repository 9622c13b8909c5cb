import { describe, expect, it } from "vitest";
import { bwrapArgs, prlimitArgs, sandboxEnv } from "./bwrap-command.js";
import { sandboxSettings } from "./sandbox-settings.js";

const root = [
  { path: "/bin", kind: "symlink" as const, target: "usr/bin" },
  { path: "/lib", kind: "dir" as const },
];
const call = { argv: ["/bin/bash", "-c", "ls"], workspace: "/srv/ws/s-1", infoFd: 3 };

/** The index of `flag` followed by `value` in `args`. */
const at = (args: string[], ...seq: string[]) => args.findIndex((_, i) => seq.every((s, j) => args[i + j] === s));

describe("bwrapArgs", () => {
  const args = bwrapArgs(sandboxSettings(), root, call);

  it("unshares every namespace, nested user namespaces and capabilities included", () => {
    expect(args.slice(0, 3)).toEqual(["--unshare-all", "--unshare-user", "--disable-userns"]);
    expect(args).toEqual(expect.arrayContaining(["--die-with-parent", "--new-session"]));
    expect(at(args, "--cap-drop", "ALL")).toBeGreaterThan(0);
    expect(args).not.toContain("--share-net");
  });

  it("shares the network only when allowed", () => {
    expect(bwrapArgs(sandboxSettings({ network: "allow" }), root, call)).toContain("--share-net");
  });

  it("binds /usr and the system paths read-only, mirrors merged-/usr symlinks", () => {
    expect(at(args, "--ro-bind", "/usr", "/usr")).toBeGreaterThan(0);
    expect(at(args, "--symlink", "usr/bin", "/bin")).toBeGreaterThan(0);
    expect(at(args, "--ro-bind", "/lib", "/lib")).toBeGreaterThan(0);
    expect(at(args, "--ro-bind-try", "/etc/passwd", "/etc/passwd")).toBeGreaterThan(0);
    expect(args.join(" ")).not.toMatch(/\/etc\/(shadow|npmrc|ssh)/);
  });

  it("makes the workspace the only writable bind, after /tmp, then the root read-only", () => {
    const binds = args.filter((a, i) => a === "--bind" && args[i - 1] !== "--ro-bind");
    expect(binds).toHaveLength(1);
    const ws = at(args, "--bind", "/srv/ws/s-1", "/srv/ws/s-1", "--chdir", "/srv/ws/s-1");
    expect(ws).toBeGreaterThan(at(args, "--tmpfs", "/tmp"));
    expect(at(args, "--remount-ro", "/")).toBeGreaterThan(ws);
  });

  it("binds extra read-only paths after /tmp, so they are not hidden by it", () => {
    const extra = bwrapArgs(sandboxSettings({ readOnlyPaths: ["/opt/toolchain"] }), root, call);
    expect(at(extra, "--ro-bind-try", "/opt/toolchain", "/opt/toolchain")).toBeGreaterThan(
      at(extra, "--tmpfs", "/tmp"),
    );
  });

  it("ends with the info fd and the command under prlimit", () => {
    const limits = { cpuSeconds: 7, memoryBytes: 1_000_000, fileBytes: 2_000, processes: 9 };
    const tail = bwrapArgs(sandboxSettings({ limits }), root, call).slice(-13);
    expect(tail).toEqual([
      "--info-fd",
      "3",
      "--",
      "/usr/bin/prlimit",
      "--cpu=7:8",
      "--as=1000000",
      "--fsize=2000",
      "--nproc=9",
      "--core=0",
      "--",
      "/bin/bash",
      "-c",
      "ls",
    ]);
    expect(prlimitArgs("/p", limits)).toEqual(tail.slice(3, 10).map((a) => (a === "/usr/bin/prlimit" ? "/p" : a)));
  });
});

describe("sandboxEnv", () => {
  it("is the settings' variables with HOME and PWD at the workspace; extra entries cannot move them", () => {
    const env = sandboxEnv(sandboxSettings({ env: { PATH: "/usr/bin" } }), "/ws", { FOO: "1", HOME: "/root" });
    expect(env).toEqual({ PATH: "/usr/bin", FOO: "1", HOME: "/ws", PWD: "/ws" });
  });
});
