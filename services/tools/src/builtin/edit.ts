import { z } from "zod";
import { defineTool } from "../define-tool.js";
import { errnoOf } from "../workspace/beneath.js";
import { throwIfAborted } from "./abort.js";
import { applyEdits, type TextEdit } from "./apply-edits.js";

const EditArgs = z.object({
  path: z.string().describe("Path to the file to edit (relative to the workspace, or absolute inside it)"),
  edits: z
    .array(
      z.object({
        oldText: z.string().describe("Exact text to replace; it must occur exactly once in the original file"),
        newText: z.string().describe("Replacement text"),
      }),
    )
    .min(1)
    .describe("One or more replacements, each matched against the original file; they must not overlap"),
});

/**
 * `edit {path, edits: [{oldText, newText}]}`: exact, unique replacements. Every edit is matched
 * against the original content and all are applied in one atomic write (temp file + rename); if any
 * edit fails, the file is left unchanged. Line endings (CRLF) and a UTF-8 BOM are preserved.
 */
export function createEditTool() {
  return defineTool({
    name: "edit",
    description:
      "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. " +
      "All edits of one call are applied together or not at all.",
    parameters: EditArgs,
    retry: "safe",
    async execute({ path, edits }, ctx) {
      throwIfAborted(ctx.signal);
      const done: { applied?: ReturnType<typeof applyEdits> } = {};
      await ctx.files
        .replaceFile(path, (current) => {
          const raw = current.toString("utf-8");
          const bom = raw.startsWith("\uFEFF") ? "\uFEFF" : "";
          const content = raw.slice(bom.length);
          const crlf = detectCrlf(content);
          const norm = (s: string) => s.replace(/\r\n/g, "\n");
          const applied = applyEdits(
            norm(content),
            edits.map((e): TextEdit => ({ oldText: norm(e.oldText), newText: norm(e.newText) })),
            path,
          );
          done.applied = applied;
          throwIfAborted(ctx.signal);
          return bom + (crlf ? applied.content.replace(/\n/g, "\r\n") : applied.content);
        })
        .catch((err) => {
          const code = errnoOf(err);
          if (code === "ENOENT" || code === "ENOTDIR") throw new Error(`Could not edit file: ${path}. File not found.`);
          if (code === "EISDIR" || code === "EINVAL") {
            throw new Error(`Could not edit file: ${path}. It is not a regular file.`);
          }
          throw err;
        });
      const { applied } = done;
      if (!applied) throw new Error(`Could not edit file: ${path}.`);
      return {
        content: [{ type: "text", text: `Successfully replaced ${edits.length} block(s) in ${path}.` }],
        details: { diff: applied.diff, firstChangedLine: applied.firstChangedLine },
      };
    },
  });
}

function detectCrlf(content: string): boolean {
  const lf = content.indexOf("\n");
  return lf > 0 && content[lf - 1] === "\r";
}
