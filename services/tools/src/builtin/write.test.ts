import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../testing/tool-harness.js";
import { createWriteTool } from "./write.js";

describe("write", () => {
  let h: Harness;
  const write = createWriteTool();
  beforeEach(async () => {
    h = await createHarness();
  });
  afterEach(() => h.cleanup());

  it("creates the file and its parent directories", async () => {
    const out = await h.run(write, { path: "deep/er/file.txt", content: "héllo\n" });
    expect(out).toEqual({ content: [{ type: "text", text: "Successfully wrote 6 bytes to deep/er/file.txt" }] });
    expect(await readFile(join(h.root, "deep/er/file.txt"), "utf-8")).toBe("héllo\n");
  });

  it("overwrites an existing file", async () => {
    await writeFile(join(h.root, "f.txt"), "old");
    await h.run(write, { path: "f.txt", content: "new" });
    expect(await readFile(join(h.root, "f.txt"), "utf-8")).toBe("new");
  });

  it("errors: a directory as target, missing content", async () => {
    await h.run(write, { path: "dir/x.txt", content: "" });
    await expect(h.run(write, { path: "dir", content: "x" })).rejects.toThrow(/EISDIR/);
    await expect(h.run(write, { path: "f.txt" })).rejects.toThrow(
      'Validation failed for tool "write":\n  - content: Invalid input: expected string, received undefined',
    );
  });

  it("does nothing once aborted", async () => {
    h.controller.abort();
    await expect(h.run(write, { path: "f.txt", content: "x" })).rejects.toThrow("Operation aborted");
    await expect(readFile(join(h.root, "f.txt"))).rejects.toThrow(/ENOENT/);
  });
});
