import { z } from "zod";
import { defineTool } from "../define-tool.js";
import { throwIfAborted } from "./abort.js";

const WriteArgs = z.object({
  path: z.string().describe("Path to the file to write (relative to the workspace, or absolute inside it)"),
  content: z.string().describe("Content to write to the file"),
});

/** `write {path, content}`: creates or overwrites a file, creating parent directories. */
export function createWriteTool() {
  return defineTool({
    name: "write",
    description:
      "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
    parameters: WriteArgs,
    retry: "safe",
    async execute({ path, content }, ctx) {
      throwIfAborted(ctx.signal);
      await ctx.files.writeFile(path, content);
      return `Successfully wrote ${content.length} bytes to ${path}`;
    },
  });
}
