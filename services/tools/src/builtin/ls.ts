import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { defineTool, type ToolOutput } from "../define-tool.js";
import { resolveInWorkspace } from "../workspace-path.js";
import { throwIfAborted } from "./abort.js";
import { listingResult } from "./listing-result.js";
import { DEFAULT_MAX_BYTES } from "./truncate.js";

const DEFAULT_LIMIT = 500;

const LsArgs = z.object({
  path: z.string().optional().describe("Directory to list (default: the workspace root)"),
  limit: z.number().int().min(1).optional().describe(`Maximum number of entries to return (default: ${DEFAULT_LIMIT})`),
});

/** `ls {path?, limit?}`: entries sorted case-insensitively, `/` after directories, dotfiles included. */
export function createLsTool() {
  return defineTool({
    name: "ls",
    description: `List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to ${DEFAULT_LIMIT} entries or ${DEFAULT_MAX_BYTES / 1024}KB (whichever is hit first).`,
    parameters: LsArgs,
    retry: "safe",
    async execute({ path, limit }, ctx): Promise<ToolOutput> {
      throwIfAborted(ctx.signal);
      const shown = path || ".";
      const dir = await resolveInWorkspace(ctx.workspace, shown);
      const info = await stat(dir).catch(() => null);
      if (!info) throw new Error(`Path not found: ${shown}`);
      if (!info.isDirectory()) throw new Error(`Not a directory: ${shown}`);
      const max = limit ?? DEFAULT_LIMIT;
      const names = await readdir(dir).catch((err: Error) =>
        Promise.reject(new Error(`Cannot read directory: ${err.message}`)),
      );
      names.sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()));
      const lines: string[] = [];
      let limitReached = false;
      for (const name of names) {
        if (lines.length >= max) {
          limitReached = true;
          break;
        }
        const entry = await stat(join(dir, name)).catch(() => null);
        lines.push(entry?.isDirectory() ? `${name}/` : name);
      }
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
