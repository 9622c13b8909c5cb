import { z } from "zod";
import { defineTool, type ToolOutput } from "../define-tool.js";
import { errnoOf } from "../workspace/beneath.js";
import { throwIfAborted } from "./abort.js";
import { listingResult } from "./listing-result.js";
import { DEFAULT_MAX_BYTES } from "./truncate.js";

const DEFAULT_LIMIT = 500;

const LsArgs = z.object({
  path: z.string().optional().describe("Directory to list (default: the workspace root)"),
  limit: z.number().int().min(1).optional().describe(`Maximum number of entries to return (default: ${DEFAULT_LIMIT})`),
});

/**
 * `ls {path?, limit?}`: entries sorted case-insensitively, `/` after directories (and after links
 * to directories inside the workspace), dotfiles included.
 */
export function createLsTool() {
  return defineTool({
    name: "ls",
    description: `List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to ${DEFAULT_LIMIT} entries or ${DEFAULT_MAX_BYTES / 1024}KB (whichever is hit first).`,
    parameters: LsArgs,
    retry: "safe",
    async execute({ path, limit }, ctx): Promise<ToolOutput> {
      throwIfAborted(ctx.signal);
      const shown = path || ".";
      const entries = await ctx.files.readdir(shown).catch((err: NodeJS.ErrnoException) => {
        const code = errnoOf(err);
        if (code === "ENOENT") throw new Error(`Path not found: ${shown}`);
        if (code === "ENOTDIR") throw new Error(`Not a directory: ${shown}`);
        if (err.name === "WorkspaceEscapeError") throw err;
        throw new Error(`Cannot read directory: ${err.message}`);
      });
      const max = limit ?? DEFAULT_LIMIT;
      entries.sort((a, b) => a.name.toLowerCase().localeCompare(b.name.toLowerCase()));
      const lines = entries.slice(0, max).map((e) => (e.kind === "dir" ? `${e.name}/` : e.name));
      const limitReached = entries.length > max;
      throwIfAborted(ctx.signal);
      if (lines.length === 0) return { content: [{ type: "text", text: "(empty directory)" }] };
      return listingResult(
        lines.join("\n"),
        limitReached
          ? { text: `${max} entries limit reached. Use limit=${max * 2} for more`, detail: ["entryLimitReached", max] }
          : undefined,
      );
    },
  });
}
