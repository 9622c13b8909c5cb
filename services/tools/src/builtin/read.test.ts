import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness, textOf } from "../testing/tool-harness.js";
import { createReadTool } from "./read.js";

const PNG_1X1 = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

describe("read", () => {
  let h: Harness;
  const read = createReadTool();
  const plain = createReadTool({ lineNumbers: false });
  beforeEach(async () => {
    h = await createHarness();
  });
  afterEach(() => h.cleanup());

  it("returns the file with line numbers", async () => {
    await writeFile(join(h.root, "a.txt"), "alpha\nbeta\ngamma");
    const out = await h.run(read, { path: "a.txt" });
    expect(out).toEqual({ content: [{ type: "text", text: "     1\talpha\n     2\tbeta\n     3\tgamma" }] });
  });

  it("does not number the empty remainder after a final newline", async () => {
    await writeFile(join(h.root, "nl.txt"), "one\ntwo\n");
    expect(textOf(await h.run(read, { path: "nl.txt" }))).toBe("     1\tone\n     2\ttwo");
    expect(textOf(await h.run(read, { path: "nl.txt", offset: 3 }))).toBe("");
  });

  it("returns pi's plain text without line numbers when configured", async () => {
    await writeFile(join(h.root, "a.txt"), "alpha\nbeta\n");
    expect(textOf(await h.run(plain, { path: "a.txt" }))).toBe("alpha\nbeta\n");
  });

  it("honours offset and limit, numbering from the offset, with a continuation note", async () => {
    await writeFile(join(h.root, "n.txt"), ["l1", "l2", "l3", "l4", "l5"].join("\n"));
    expect(textOf(await h.run(read, { path: "n.txt", offset: 2, limit: 2 }))).toBe(
      "     2\tl2\n     3\tl3\n\n[2 more lines in file. Use offset=4 to continue.]",
    );
    expect(textOf(await h.run(read, { path: "n.txt", offset: 4 }))).toBe("     4\tl4\n     5\tl5");
  });

  it('coerces numeric strings like pi (offset: "2")', async () => {
    await writeFile(join(h.root, "n.txt"), "a\nb\nc");
    expect(textOf(await h.run(plain, { path: "n.txt", offset: "2", limit: "1" }))).toBe(
      "b\n\n[1 more lines in file. Use offset=3 to continue.]",
    );
  });

  it("truncates long files at 2000 lines with pi's note", async () => {
    const lines = Array.from({ length: 2500 }, (_, i) => `line ${i + 1}`);
    await writeFile(join(h.root, "long.txt"), lines.join("\n"));
    const out = await h.run(plain, { path: "long.txt" });
    const text = textOf(out);
    expect(text.split("\n\n")[0]?.split("\n")).toHaveLength(2000);
    expect(text.endsWith("\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]")).toBe(true);
    expect(out.details).toMatchObject({ truncation: { truncated: true, truncatedBy: "lines", outputLines: 2000 } });
  });

  it("truncates at 50 KB with pi's byte-limit note", async () => {
    const lines = Array.from({ length: 1000 }, () => "x".repeat(99));
    await writeFile(join(h.root, "wide.txt"), lines.join("\n"));
    const text = textOf(await h.run(plain, { path: "wide.txt" }));
    expect(text.endsWith("\n\n[Showing lines 1-512 of 1000 (50.0KB limit). Use offset=513 to continue.]")).toBe(true);
  });

  it("explains a first line over the byte limit", async () => {
    await writeFile(join(h.root, "one.txt"), "y".repeat(60 * 1024));
    expect(textOf(await h.run(plain, { path: "one.txt" }))).toBe(
      "[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' one.txt | head -c 51200]",
    );
  });

  it("returns images as image content", async () => {
    await writeFile(join(h.root, "dot.png"), PNG_1X1);
    const out = await h.run(read, { path: "dot.png" });
    expect(out.content).toEqual([
      { type: "text", text: "Read image file [image/png]" },
      { type: "image", data: PNG_1X1.toString("base64"), mimeType: "image/png" },
    ]);
  });

  it("stores images over the inline limit in the blob store", async () => {
    const tiny = createReadTool({ maxInlineImageBytes: 10 });
    await writeFile(join(h.root, "dot.png"), PNG_1X1);
    const out = await h.run(tiny, { path: "dot.png" });
    expect(out.content).toHaveLength(1);
    expect(textOf(out)).toMatch(
      /^Read image file \[image\/png\]\n\[Image omitted: 70B exceeds the inline limit of 10B\./,
    );
    expect(Buffer.from(h.blobs.blobs.get("read-dot.png") ?? []).equals(PNG_1X1)).toBe(true);
  });

  it("errors: missing file, directory, offset past the end, invalid arguments", async () => {
    await mkdir(join(h.root, "d"));
    await writeFile(join(h.root, "short.txt"), "a\nb");
    await expect(h.run(read, { path: "nope.txt" })).rejects.toThrow("File not found: nope.txt");
    await expect(h.run(read, { path: "d" })).rejects.toThrow("Path is a directory: d. Use ls to list it.");
    await expect(h.run(read, { path: "short.txt", offset: 5 })).rejects.toThrow(
      "Offset 5 is beyond end of file (2 lines total)",
    );
    await expect(h.run(read, { offset: 0 })).rejects.toThrow(
      'Validation failed for tool "read":\n  - path: Invalid input: expected string, received undefined\n  - offset: Too small: expected number to be >=1\n\nReceived arguments:\n{\n  "offset": 0\n}',
    );
  });

  it("fails with Operation aborted when the signal is already aborted", async () => {
    await writeFile(join(h.root, "a.txt"), "x");
    h.controller.abort();
    await expect(h.run(read, { path: "a.txt" })).rejects.toThrow("Operation aborted");
  });
});
