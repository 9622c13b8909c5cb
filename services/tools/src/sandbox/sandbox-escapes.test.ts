// Escape attempts from `bash` in the real bubblewrap sandbox. Each one runs as the model would
// send it; the assertion is on the host: nothing lands outside the workspace.
import { existsSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBashTool } from "../builtin/bash.js";
import { createHarness, type Harness, textOf } from "../testing/tool-harness.js";

const bash = createBashTool();

describe("bash in the sandbox: writing outside the workspace fails", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness();
    expect(h.ctx.sandbox.status.mode).toBe("bwrap");
  });
  afterEach(() => h.cleanup());

  const run = async (command: string) => {
    const out = await h.run(bash, { command });
    return { text: textOf(out), exitCode: (out.details as { exitCode: number | null }).exitCode };
  };

  it("the workspace itself is writable, at its real path (the control)", async () => {
    expect(await run("echo inside > ok.txt && pwd")).toEqual({ text: `${h.root}\n`, exitCode: 0 });
    expect(readFileSync(join(h.root, "ok.txt"), "utf-8")).toBe("inside\n");
  });

  it("an absolute path: the host directory does not exist in the sandbox", async () => {
    const target = join(h.outside, "abs.txt");
    const { text, exitCode } = await run(`echo pwned > ${target}`);
    expect(exitCode).toBe(1);
    expect(text).toContain(`${target}: No such file or directory`);
    expect(existsSync(target)).toBe(false);
  });

  it("`..`: the workspace's parents are empty scratch directories, gone with the sandbox", async () => {
    const { text, exitCode } = await run(
      "ls -A ..; echo pwned > ../outside/dotdot.txt; echo pwned > ../dotdot.txt && echo wrote-scratch",
    );
    expect(exitCode).toBe(0);
    expect(text).toMatch(/^ws$/m);
    expect(text).toContain("../outside/dotdot.txt: No such file or directory");
    expect(text).toContain("wrote-scratch");
    expect(existsSync(join(h.outside, "dotdot.txt"))).toBe(false);
    expect(existsSync(join(h.root, "..", "dotdot.txt"))).toBe(false);
  });

  it("a symlink made on the host to a directory outside leads nowhere", async () => {
    symlinkSync(h.outside, join(h.root, "link"));
    const { text, exitCode } = await run("echo pwned > link/sym.txt");
    expect(exitCode).toBe(1);
    expect(text).toContain("link/sym.txt: No such file or directory");
    expect(existsSync(join(h.outside, "sym.txt"))).toBe(false);
  });

  it("a symlink made in the sandbox to a system file cannot be written through", async () => {
    const { text, exitCode } = await run("ln -s /etc/passwd p && echo pwned >> p");
    expect(exitCode).toBe(1);
    expect(text).toContain("p: Read-only file system");
  });

  it("/proc/self/root and /proc/1/root are the sandbox's own root", async () => {
    const target = join(h.outside, "proc.txt");
    const { text, exitCode } = await run(
      `echo pwned > /proc/self/root${target}; echo pwned > /proc/1/root${target}; ls /proc/1/root/`,
    );
    expect(exitCode).toBe(0);
    expect(text).toContain(`/proc/self/root${target}: No such file or directory`);
    expect(text).toContain(`/proc/1/root${target}: No such file or directory`);
    expect(existsSync(target)).toBe(false);
  });

  it("system directories and the root are read-only", async () => {
    const { text } = await run("for p in /usr/pwned /etc/pwned /pwned /bin/pwned; do touch $p; done");
    for (const p of ["/usr/pwned", "/etc/pwned", "/pwned", "/bin/pwned"]) {
      expect(text).toContain(`touch: cannot touch '${p}': Read-only file system`);
      expect(existsSync(p)).toBe(false);
    }
  });

  it("no capabilities: remounting /usr read-write fails", async () => {
    const { text } = await run("grep CapEff /proc/self/status; mount -o remount,rw,bind /usr; touch /usr/pwned");
    expect(text).toContain("CapEff:\t0000000000000000");
    expect(text).toMatch(/mount: \/usr: permission denied/);
    expect(text).toContain("touch: cannot touch '/usr/pwned': Read-only file system");
    expect(existsSync("/usr/pwned")).toBe(false);
  });

  it("no nested user namespace to regain capabilities in", async () => {
    const { text, exitCode } = await run("unshare -rm sh -c 'mount -o remount,rw,bind /usr && touch /usr/pwned'");
    expect(exitCode).toBe(1);
    expect(text).toMatch(/^unshare: unshare failed: /);
    expect(existsSync("/usr/pwned")).toBe(false);
  });

  it("/tmp is private and empty, and what is written there is gone afterwards", async () => {
    const { text } = await run("ls -A /tmp | grep -v '^fleet-tools-test-'; echo secret > /tmp/left.txt; echo done");
    expect(text).toBe("done\n");
    expect(existsSync("/tmp/left.txt")).toBe(false);
  });

  it("the runner's processes are invisible: only the sandbox's own PID namespace", async () => {
    const { text } = await run(`ls /proc | grep -c '^[0-9]'; kill -0 ${process.pid} && echo runner-visible`);
    const [count] = text.split("\n");
    expect(Number(count)).toBeLessThanOrEqual(5);
    expect(text).not.toContain("runner-visible");
  });

  it("/etc holds only the listed files, no credentials", async () => {
    const { text } = await run("ls -A /etc; test -e /etc/shadow || echo no-shadow");
    expect(text).toContain("no-shadow");
    expect(text).not.toMatch(/^(shadow|gshadow|npmrc|ssh)$/m);
    expect(text).toMatch(/^passwd$/m);
  });
});
