import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtinTools } from "./builtin/index.js";
import type { AnyToolDefinition } from "./define-tool.js";
import { createHarness, type Harness } from "./testing/tool-harness.js";
import { ensureWorkspace, resolveInWorkspace, WorkspaceEscapeError } from "./workspace-path.js";

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

  it("resolves relative and absolute paths inside the root", async () => {
    expect(await resolveInWorkspace(h.root, "sub/ok.txt")).toBe(join(h.root, "sub", "ok.txt"));
    expect(await resolveInWorkspace(h.root, join(h.root, "sub/ok.txt"))).toBe(join(h.root, "sub", "ok.txt"));
    expect(await resolveInWorkspace(h.root, "sub/../sub/new/file.txt")).toBe(join(h.root, "sub", "new", "file.txt"));
    expect(await resolveInWorkspace(h.root, "")).toBe(h.root);
    expect(await resolveInWorkspace(h.root, "@sub/ok.txt")).toBe(join(h.root, "sub", "ok.txt"));
  });

  it("follows symlinks that stay inside the root", async () => {
    expect(await resolveInWorkspace(h.root, "link-in/ok.txt")).toBe(join(h.root, "sub", "ok.txt"));
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
    await expect(resolveInWorkspace(h.root, p)).rejects.toThrow(WorkspaceEscapeError);
    await expect(resolveInWorkspace(h.root, p)).rejects.toThrow(message);
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
