import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../testing/tool-harness.js";
import { createEditTool } from "./edit.js";

describe("edit", () => {
  let h: Harness;
  const edit = createEditTool();
  const file = () => join(h.root, "code.ts");
  beforeEach(async () => {
    h = await createHarness();
    await writeFile(file(), "const a = 1;\nconst b = 2;\nconst c = 3;\n");
  });
  afterEach(() => h.cleanup());

  it("replaces one unique text", async () => {
    const out = await h.run(edit, { path: "code.ts", edits: [{ oldText: "b = 2", newText: "b = 20" }] });
    expect(out).toEqual({
      content: [{ type: "text", text: "Successfully replaced 1 block(s) in code.ts." }],
      details: { diff: "-2 const b = 2;\n+2 const b = 20;", firstChangedLine: 2 },
    });
    expect(await readFile(file(), "utf-8")).toBe("const a = 1;\nconst b = 20;\nconst c = 3;\n");
  });

  it("applies several edits of one call against the original content", async () => {
    await h.run(edit, {
      path: "code.ts",
      edits: [
        { oldText: "const c = 3;", newText: "const c = 30;" },
        { oldText: "const a = 1;", newText: "const a = 10;\nconst a2 = 11;" },
      ],
    });
    expect(await readFile(file(), "utf-8")).toBe("const a = 10;\nconst a2 = 11;\nconst b = 2;\nconst c = 30;\n");
  });

  it("applies nothing when one of several edits fails (atomic)", async () => {
    await expect(
      h.run(edit, {
        path: "code.ts",
        edits: [
          { oldText: "const a = 1;", newText: "X" },
          { oldText: "missing", newText: "Y" },
        ],
      }),
    ).rejects.toThrow(
      "Could not find edits[1] in code.ts. The oldText must match exactly including all whitespace and newlines.",
    );
    expect(await readFile(file(), "utf-8")).toBe("const a = 1;\nconst b = 2;\nconst c = 3;\n");
    expect(await readdir(h.root)).toEqual(["code.ts"]);
  });

  it("errors clearly for no match and for several matches", async () => {
    await expect(h.run(edit, { path: "code.ts", edits: [{ oldText: "nope", newText: "x" }] })).rejects.toThrow(
      "Could not find the exact text in code.ts. The old text must match exactly including all whitespace and newlines.",
    );
    await expect(h.run(edit, { path: "code.ts", edits: [{ oldText: "const", newText: "let" }] })).rejects.toThrow(
      "Found 3 occurrences of the text in code.ts. The text must be unique. Please provide more context to make it unique.",
    );
    await expect(
      h.run(edit, {
        path: "code.ts",
        edits: [
          { oldText: "a = 1", newText: "x" },
          { oldText: " = ", newText: "y" },
        ],
      }),
    ).rejects.toThrow(
      "Found 3 occurrences of edits[1] in code.ts. Each oldText must be unique. Please provide more context to make it unique.",
    );
  });

  it("errors for overlapping edits, empty oldText, identical content, a missing file and no edits", async () => {
    await expect(
      h.run(edit, {
        path: "code.ts",
        edits: [
          { oldText: "const a = 1;\nconst b", newText: "x" },
          { oldText: "b = 2;", newText: "y" },
        ],
      }),
    ).rejects.toThrow("edits[0] and edits[1] overlap in code.ts. Merge them into one edit or target disjoint regions.");
    await expect(h.run(edit, { path: "code.ts", edits: [{ oldText: "", newText: "x" }] })).rejects.toThrow(
      "oldText must not be empty in code.ts.",
    );
    await expect(h.run(edit, { path: "code.ts", edits: [{ oldText: "a = 1", newText: "a = 1" }] })).rejects.toThrow(
      "No changes made to code.ts. The replacement produced identical content.",
    );
    await expect(h.run(edit, { path: "nope.ts", edits: [{ oldText: "a", newText: "b" }] })).rejects.toThrow(
      "Could not edit file: nope.ts. File not found.",
    );
    await expect(h.run(edit, { path: "code.ts", edits: [] })).rejects.toThrow(
      'Validation failed for tool "edit":\n  - edits: Too small: expected array to have >=1 items',
    );
  });

  it("preserves CRLF line endings and a BOM", async () => {
    await writeFile(file(), "\uFEFFone\r\ntwo\r\nthree\r\n");
    await h.run(edit, { path: "code.ts", edits: [{ oldText: "one\ntwo", newText: "1\n2" }] });
    expect(await readFile(file(), "utf-8")).toBe("\uFEFF1\r\n2\r\nthree\r\n");
  });
});
