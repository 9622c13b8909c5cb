import { execFileSync } from "node:child_process";
import { mkdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtinTools } from "../builtin/index.js";
import type { AnyToolDefinition } from "../define-tool.js";
import { createHarness, type Harness } from "../testing/tool-harness.js";
import { createWorkspaceFiles } from "./workspace-files.js";
import { ensureWorkspace, WorkspaceEscapeError } from "./workspace-path.js";

const tool = (name: string) => builtinTools.find((t) => t.name === name) as AnyToolDefinition;

describe("workspace confinement", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness();
    await writeFile(join(h.outside, "secret.txt"), "top secret\n");
    await mkdir(join(h.root, "sub"));
    await writeFile(join(h.root, "sub", "ok.txt"), "fine\n");
    await symlink(h.outside, join(h.root, "link-out"));
    await symlink(join(h.outside, "secret.txt"), join(h.root, "secret-link.txt"));
    await symlink(join(h.outside, "not-there-yet.txt"), join(h.root, "dangling.txt"));
    await symlink(join(h.root, "sub"), join(h.root, "link-in"));
  });
  afterEach(() => h.cleanup());

  it("reads and writes relative and absolute paths inside the root", async () => {
    const files = createWorkspaceFiles(h.root);
    expect((await files.readFile("sub/ok.txt")).toString()).toBe("fine\n");
    expect((await files.readFile(join(h.root, "sub/ok.txt"))).toString()).toBe("fine\n");
    expect((await files.readFile("@sub/ok.txt")).toString()).toBe("fine\n");
    await files.writeFile("sub/../sub/new/file.txt", "made");
    expect(await readFile(join(h.root, "sub", "new", "file.txt"), "utf-8")).toBe("made");
    expect((await files.stat(""))?.kind).toBe("dir");
    expect(await files.stat("sub/missing.txt")).toBeNull();
    expect(await files.stat("sub/ok.txt/below")).toBeNull();
  });

  it("follows symlinks that stay inside the root, relative, absolute and chained", async () => {
    const files = createWorkspaceFiles(h.root);
    await symlink("../sub/ok.txt", join(h.root, "sub", "rel-link.txt"));
    await symlink("link-in", join(h.root, "chain"));
    expect((await files.readFile("link-in/ok.txt")).toString()).toBe("fine\n");
    expect((await files.readFile("sub/rel-link.txt")).toString()).toBe("fine\n");
    expect((await files.readFile("chain/ok.txt")).toString()).toBe("fine\n");
    await files.writeFile("chain/through.txt", "via links");
    expect(await readFile(join(h.root, "sub", "through.txt"), "utf-8")).toBe("via links");
    const listed = await files.readdir(".");
    expect(listed.find((e) => e.name === "link-in")).toEqual({ name: "link-in", kind: "dir", isSymlink: true });
    expect(listed.find((e) => e.name === "link-out")).toEqual({ name: "link-out", kind: "other", isSymlink: true });
  });

  it("refuses a symlink loop with a clear error", async () => {
    await symlink("loop-b", join(h.root, "loop-a"));
    await symlink("loop-a", join(h.root, "loop-b"));
    await expect(createWorkspaceFiles(h.root).readFile("loop-a")).rejects.toThrow(/Too many levels of symbolic links/);
  });

  it("replaceFile swaps the content atomically in the same directory and keeps the mode", async () => {
    const files = createWorkspaceFiles(h.root);
    await writeFile(join(h.root, "sub", "script.sh"), "echo one\n", { mode: 0o750 });
    await files.replaceFile("link-in/script.sh", (b) => b.toString().replace("one", "two"));
    expect(await readFile(join(h.root, "sub", "script.sh"), "utf-8")).toBe("echo two\n");
    expect((await stat(join(h.root, "sub", "script.sh"))).mode & 0o777).toBe(0o750);
    await expect(
      files.replaceFile("sub/script.sh", () => {
        throw new Error("no match");
      }),
    ).rejects.toThrow("no match");
    expect(await readFile(join(h.root, "sub", "script.sh"), "utf-8")).toBe("echo two\n");
    const { readdir } = await import("node:fs/promises");
    expect((await readdir(join(h.root, "sub"))).filter((n) => n.includes("fleet-edit"))).toEqual([]);
  });

  it("does not hang on a FIFO planted in the workspace", async () => {
    execFileSync("mkfifo", [join(h.root, "pipe")]);
    const out = await h.run(tool("read"), { path: "pipe" }).catch((e: Error) => e.message);
    expect(out).toMatch(/Not a regular file/);
    const grep = await h.run(tool("grep"), { pattern: "x" });
    expect(grep.content).toEqual([{ type: "text", text: "No matches found" }]);
  });

  const escapes: Array<[string, (h: Harness) => string, RegExp]> = [
    ["parent directory", () => "..", /outside the workspace/],
    ["parent file", () => "../outside/secret.txt", /outside the workspace/],
    ["nested dot-dot", () => "sub/../../outside/secret.txt", /outside the workspace/],
    ["deep dot-dot", () => "a/b/c/../../../../x", /outside the workspace/],
    ["absolute /etc/passwd", () => "/etc/passwd", /outside the workspace/],
    ["absolute path of a sibling", (h) => join(h.outside, "secret.txt"), /outside the workspace/],
    ["absolute root", () => "/", /outside the workspace/],
    ["home directory", () => "~/.ssh/id_rsa", /home-directory paths are not allowed/],
    ["tilde alone", () => "~", /home-directory paths are not allowed/],
    ["NUL byte", () => "sub/ok.txt\0../../x", /NUL byte/],
    ["symlinked directory", () => "link-out/secret.txt", /symlink .* outside the workspace/],
    ["symlinked file", () => "secret-link.txt", /symlink .* outside the workspace/],
    ["new file under a symlinked directory", () => "link-out/new.txt", /symlink .* outside the workspace/],
    ["dangling symlink to outside", () => "dangling.txt", /symlink .* outside the workspace/],
    ["root prefix trick", (h) => `${h.root}-evil/file`, /outside the workspace/],
    ["at-prefixed escape", () => "@../outside/secret.txt", /outside the workspace/],
  ];

  it.each(escapes)("refuses %s", async (_name, path, message) => {
    const p = path(h);
    const files = createWorkspaceFiles(h.root);
    await expect(files.stat(p)).rejects.toThrow(WorkspaceEscapeError);
    await expect(files.readFile(p)).rejects.toThrow(message);
    await expect(files.writeFile(p, "x")).rejects.toThrow(message);
  });

  it("every path-taking built-in tool refuses escapes with a clear error", async () => {
    const attempts: Array<[string, unknown]> = [
      ["read", { path: "../outside/secret.txt" }],
      ["read", { path: "secret-link.txt" }],
      ["write", { path: "../outside/pwned.txt", content: "x" }],
      ["write", { path: "link-out/pwned.txt", content: "x" }],
      ["write", { path: "dangling.txt", content: "x" }],
      ["edit", { path: "secret-link.txt", edits: [{ oldText: "top", newText: "no" }] }],
      ["ls", { path: "link-out" }],
      ["ls", { path: "/" }],
      ["find", { pattern: "*", path: ".." }],
      ["grep", { pattern: "secret", path: "link-out" }],
      ["grep", { pattern: "secret", path: "/etc" }],
    ];
    for (const [name, args] of attempts) {
      await expect(h.run(tool(name), args), `${name} ${JSON.stringify(args)}`).rejects.toThrow(/outside the workspace/);
    }
    const { readdir, readFile } = await import("node:fs/promises");
    expect((await readdir(h.outside)).sort()).toEqual(["secret.txt"]);
    expect(await readFile(join(h.outside, "secret.txt"), "utf-8")).toBe("top secret\n");
  });

  it("grep and find do not follow symlinks out of the workspace while walking", async () => {
    const grep = await h.run(tool("grep"), { pattern: "top secret" });
    expect(grep.content).toEqual([{ type: "text", text: "No matches found" }]);
    const find = await h.run(tool("find"), { pattern: "secret.txt" });
    expect(find.content).toEqual([{ type: "text", text: "No files found matching pattern" }]);
  });

  it("ensureWorkspace creates <root>/<sessionId> and refuses invalid session ids", async () => {
    expect(await ensureWorkspace(h.root, "s-2")).toBe(join(h.root, "s-2"));
    expect(await ensureWorkspace(h.root, "s-2", "shared")).toBe(h.root);
    await expect(ensureWorkspace(h.root, "../x")).rejects.toThrow('invalid session id "../x"');
  });
});
