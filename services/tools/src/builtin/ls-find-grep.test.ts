import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness, textOf } from "../testing/tool-harness.js";
import { createFindTool } from "./find.js";
import { createGrepTool } from "./grep.js";
import { createLsTool } from "./ls.js";

describe("ls, find and grep", () => {
  let h: Harness;
  const ls = createLsTool();
  const find = createFindTool();
  const grep = createGrepTool();
  const put = async (rel: string, content: string | Buffer) => {
    await mkdir(join(h.root, rel, ".."), { recursive: true });
    await writeFile(join(h.root, rel), content);
  };
  beforeEach(async () => {
    h = await createHarness();
    await put("README.md", "# Title\nTODO: write docs\n");
    await put("src/main.ts", "export const main = 1;\n// TODO fix\nconst todo = 2;\n");
    await put("src/lib/util.ts", "export function util() {}\n");
    await put("src/lib/util.test.ts", "test('util TODO')\n");
    await put(".hidden", "TODO hidden\n");
    await put("node_modules/dep/index.js", "TODO in dependency\n");
    await put("bin.dat", Buffer.from([0x54, 0x4f, 0x44, 0x4f, 0x00, 0x01]));
  });
  afterEach(() => h.cleanup());

  describe("ls", () => {
    it("lists sorted entries, directories with /, dotfiles included", async () => {
      expect(textOf(await h.run(ls, {}))).toBe(".hidden\nbin.dat\nnode_modules/\nREADME.md\nsrc/");
      expect(textOf(await h.run(ls, { path: "src" }))).toBe("lib/\nmain.ts");
    });
    it("notes the entry limit", async () => {
      const out = await h.run(ls, { limit: 2 });
      expect(out).toEqual({
        content: [{ type: "text", text: ".hidden\nbin.dat\n\n[2 entries limit reached. Use limit=4 for more]" }],
        details: { entryLimitReached: 2 },
      });
    });
    it("errors for a missing path, a file, and an empty directory is reported", async () => {
      await expect(h.run(ls, { path: "nope" })).rejects.toThrow("Path not found: nope");
      await expect(h.run(ls, { path: "README.md" })).rejects.toThrow("Not a directory: README.md");
      await mkdir(join(h.root, "empty"));
      expect(textOf(await h.run(ls, { path: "empty" }))).toBe("(empty directory)");
    });
  });

  describe("find", () => {
    it("matches base names at any depth for patterns without a slash", async () => {
      expect(textOf(await h.run(find, { pattern: "*.ts" }))).toBe("src/main.ts\nsrc/lib/util.test.ts\nsrc/lib/util.ts");
    });
    it("matches relative paths for patterns with a slash, below a given path", async () => {
      expect(textOf(await h.run(find, { pattern: "src/**/*.test.ts" }))).toBe("src/lib/util.test.ts");
      expect(textOf(await h.run(find, { pattern: "lib/*", path: "src" }))).toBe("lib/util.test.ts\nlib/util.ts");
      expect(textOf(await h.run(find, { pattern: "lib" }))).toBe("src/lib/");
    });
    it("skips node_modules, reports no match and the result limit", async () => {
      expect(textOf(await h.run(find, { pattern: "index.js" }))).toBe("No files found matching pattern");
      expect(await h.run(find, { pattern: "*", limit: 2 })).toEqual({
        content: [
          {
            type: "text",
            text: ".hidden\nREADME.md\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]",
          },
        ],
        details: { resultLimitReached: 2 },
      });
    });
    it("errors for a missing directory and a missing pattern", async () => {
      await expect(h.run(find, { pattern: "*", path: "nope" })).rejects.toThrow("Path not found: nope");
      await expect(h.run(find, {})).rejects.toThrow('Validation failed for tool "find":\n  - pattern:');
    });
  });

  describe("grep", () => {
    it("prints file:line: text for regex matches, skipping binaries and node_modules", async () => {
      expect(textOf(await h.run(grep, { pattern: "TODO" }))).toBe(
        [
          ".hidden:1: TODO hidden",
          "README.md:2: TODO: write docs",
          "src/main.ts:2: // TODO fix",
          "src/lib/util.test.ts:1: test('util TODO')",
        ].join("\n"),
      );
    });
    it("filters by glob and path, case-insensitively on request, with context lines", async () => {
      expect(textOf(await h.run(grep, { pattern: "todo", glob: "*.ts", ignoreCase: true, path: "src" }))).toBe(
        "main.ts:2: // TODO fix\nmain.ts:3: const todo = 2;\nlib/util.test.ts:1: test('util TODO')",
      );
      expect(textOf(await h.run(grep, { pattern: "^// TODO", path: "src/main.ts", context: 1 }))).toBe(
        "main.ts-1- export const main = 1;\nmain.ts:2: // TODO fix\nmain.ts-3- const todo = 2;",
      );
      expect(textOf(await h.run(grep, { pattern: "util(x", literal: true }))).toBe("No matches found");
      expect(textOf(await h.run(grep, { pattern: "util() {", literal: true }))).toBe(
        "src/lib/util.ts:1: export function util() {}",
      );
    });
    it("limits matches and line length", async () => {
      await put("many.txt", `${Array.from({ length: 5 }, (_, i) => `hit ${i}`).join("\n")}\nhit ${"x".repeat(600)}\n`);
      const out = await h.run(grep, { pattern: "hit", path: "many.txt", limit: 3 });
      expect(out).toEqual({
        content: [
          {
            type: "text",
            text: "many.txt:1: hit 0\nmany.txt:2: hit 1\nmany.txt:3: hit 2\n\n[3 matches limit reached. Use limit=6 for more, or refine pattern]",
          },
        ],
        details: { matchLimitReached: 3 },
      });
      const long = textOf(await h.run(grep, { pattern: "x{600}", path: "many.txt" }));
      expect(long).toBe(
        `many.txt:6: hit ${"x".repeat(496)}... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]`,
      );
    });
    it("errors for an invalid regex and a missing path", async () => {
      await expect(h.run(grep, { pattern: "(" })).rejects.toThrow('Invalid regular expression "(":');
      await expect(h.run(grep, { pattern: "x", path: "nope" })).rejects.toThrow("Path not found: nope");
    });
  });
});
