import { defineTool } from "@fleet/tools";
import { z } from "zod";

/** A custom tool: counts lines, words and characters of a file in the session's workspace. */
export const wordCount = defineTool({
  name: "word_count",
  description: "Count the lines, words and characters of a text file in the workspace.",
  parameters: z.object({ path: z.string().describe("File to count, relative to the workspace") }),
  retry: "safe", // read-only, so a redelivery after a crash may simply run it again
  timeoutMs: 10_000,
  async execute({ path }, ctx) {
    const text = (await ctx.files.readFile(path)).toString("utf-8");
    const counts = {
      lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0),
      words: text.split(/\s+/).filter(Boolean).length,
      chars: [...text].length,
    };
    return {
      content: [{ type: "text", text: `${counts.lines} lines, ${counts.words} words, ${counts.chars} characters` }],
      details: counts,
    };
  },
});
