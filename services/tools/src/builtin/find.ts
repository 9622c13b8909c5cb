import picomatch from "picomatch";
import { z } from "zod";
import { defineTool, type ToolOutput } from "../define-tool.js";
import { throwIfAborted } from "./abort.js";
import { listingResult } from "./listing-result.js";
import { DEFAULT_MAX_BYTES } from "./truncate.js";

const DEFAULT_LIMIT = 1000;

const FindArgs = z.object({
  pattern: z.string().min(1).describe("Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'"),
  path: z.string().optional().describe("Directory to search in (default: the workspace root)"),
  limit: z.number().int().min(1).optional().describe(`Maximum number of results (default: ${DEFAULT_LIMIT})`),
});

/**
 * Builds a matcher for a glob: a pattern without `/` matches the base name at any depth (`*.ts`),
 * a pattern with `/` matches the path relative to the search directory. Dotfiles match.
 */
export function globMatcher(pattern: string): (rel: string) => boolean {
  const opts = { dot: true };
  if (!pattern.includes("/")) {
    const isMatch = picomatch(pattern, opts);
    return (rel) => isMatch(rel.slice(rel.lastIndexOf("/") + 1));
  }
  const isMatch = picomatch(pattern.startsWith("./") ? pattern.slice(2) : pattern, opts);
  return (rel) => isMatch(rel);
}

/** `find {pattern, path?, limit?}`: glob search; paths relative to the search directory, `/` after directories. */
export function createFindTool() {
  return defineTool({
    name: "find",
    description: `Search for files by glob pattern. Returns matching paths relative to the search directory (directories end with '/'). Skips .git and node_modules. Output is truncated to ${DEFAULT_LIMIT} results or ${DEFAULT_MAX_BYTES / 1024}KB (whichever is hit first).`,
    parameters: FindArgs,
    retry: "safe",
    async execute({ pattern, path, limit }, ctx): Promise<ToolOutput> {
      throwIfAborted(ctx.signal);
      const shown = path || ".";
      const info = await ctx.files.stat(shown);
      if (!info) throw new Error(`Path not found: ${shown}`);
      if (info.kind !== "dir") throw new Error(`Not a directory: ${shown}`);
      const max = limit ?? DEFAULT_LIMIT;
      const matches = globMatcher(pattern);
      const found: string[] = [];
      let limitReached = false;
      for await (const entry of ctx.files.walk(shown, ctx.signal)) {
        if (!matches(entry.rel)) continue;
        if (found.length >= max) {
          limitReached = true;
          break;
        }
        found.push(entry.kind === "dir" ? `${entry.rel}/` : entry.rel);
      }
      if (found.length === 0) return { content: [{ type: "text", text: "No files found matching pattern" }] };
      return listingResult(
        found.join("\n"),
        limitReached
          ? {
              text: `${max} results limit reached. Use limit=${max * 2} for more, or refine pattern`,
              detail: ["resultLimitReached", max],
            }
          : undefined,
      );
    },
  });
}
