import type { FileHandle } from "node:fs/promises";
import { basename } from "node:path";
import { z } from "zod";
import { defineTool, type ToolOutput } from "../define-tool.js";
import type { FileInfo } from "../workspace/workspace-files.js";
import { throwIfAborted } from "./abort.js";
import { globMatcher } from "./find.js";
import { listingResult } from "./listing-result.js";
import { DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, truncateLine } from "./truncate.js";

const DEFAULT_LIMIT = 100;
/** Files larger than this are not searched. */
const MAX_FILE_BYTES = 10 * 1024 * 1024;

const GrepArgs = z.object({
  pattern: z
    .string()
    .min(1)
    .describe("Search pattern (JavaScript regular expression, or a literal string with literal=true)"),
  path: z.string().optional().describe("Directory or file to search (default: the workspace root)"),
  glob: z.string().optional().describe("Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"),
  ignoreCase: z.boolean().optional().describe("Case-insensitive search (default: false)"),
  literal: z.boolean().optional().describe("Treat pattern as a literal string instead of a regex (default: false)"),
  context: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Number of lines to show before and after each match (default: 0)"),
  limit: z.number().int().min(1).optional().describe(`Maximum number of matches to return (default: ${DEFAULT_LIMIT})`),
});

/**
 * `grep {pattern, path?, glob?}` (+ pi's optional ignoreCase, literal, context, limit): regex search
 * with `file:line: text` output (context lines as `file-line- text`), at most `limit` matches, lines
 * cut to 500 characters, 50 KB in total. Binary files, .git and node_modules are skipped.
 */
export function createGrepTool() {
  return defineTool({
    name: "grep",
    description: `Search file contents for a pattern. Returns matching lines with file paths and line numbers (path:line: text). Output is truncated to ${DEFAULT_LIMIT} matches or ${DEFAULT_MAX_BYTES / 1024}KB (whichever is hit first). Long lines are truncated to ${GREP_MAX_LINE_LENGTH} chars.`,
    parameters: GrepArgs,
    retry: "safe",
    async execute(args, ctx): Promise<ToolOutput> {
      throwIfAborted(ctx.signal);
      const shown = args.path || ".";
      const info = await ctx.files.stat(shown);
      if (!info) throw new Error(`Path not found: ${shown}`);
      let regex: RegExp;
      try {
        const source = args.literal ? args.pattern.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") : args.pattern;
        regex = new RegExp(source, args.ignoreCase ? "i" : "");
      } catch (err) {
        throw new Error(`Invalid regular expression ${JSON.stringify(args.pattern)}: ${(err as Error).message}`);
      }
      const max = args.limit ?? DEFAULT_LIMIT;
      const context = args.context ?? 0;
      const globOk = args.glob ? globMatcher(args.glob) : () => true;
      const out: string[] = [];
      let matchCount = 0;
      let linesTruncated = false;
      /** Adds a file's matches; false once the limit is reached. */
      const search = (rel: string, lines: string[]): boolean => {
        for (let i = 0; i < lines.length; i++) {
          if (!regex.test(lines[i] ?? "")) continue;
          matchCount++;
          const from = Math.max(0, i - context);
          const to = Math.min(lines.length - 1, i + context);
          for (let j = from; j <= to; j++) {
            const cut = truncateLine(lines[j] ?? "");
            if (cut.wasTruncated) linesTruncated = true;
            out.push(j === i ? `${rel}:${j + 1}: ${cut.text}` : `${rel}-${j + 1}- ${cut.text}`);
          }
          if (matchCount >= max) return false;
        }
        return true;
      };
      if (info.kind === "dir") {
        for await (const entry of ctx.files.walk(shown, ctx.signal)) {
          if ((entry.kind !== "file" && entry.kind !== "symlink") || !globOk(entry.rel)) continue;
          const opened = await ctx.files.openWalked(entry);
          const lines = opened ? await searchableLines(opened) : null;
          if (lines && !search(entry.rel, lines)) break;
        }
      } else {
        const opened = await ctx.files.openRead(shown).catch(() => null);
        const lines = opened ? await searchableLines(opened) : null;
        if (lines) search(basename(shown), lines);
      }
      if (matchCount === 0) return { content: [{ type: "text", text: "No matches found" }] };
      return listingResult(
        out.join("\n"),
        matchCount >= max
          ? {
              text: `${max} matches limit reached. Use limit=${max * 2} for more, or refine pattern`,
              detail: ["matchLimitReached", max],
            }
          : undefined,
        linesTruncated
          ? [
              {
                text: `Some lines truncated to ${GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines`,
                detail: ["linesTruncated", true],
              },
            ]
          : [],
      );
    },
  });
}

/** The file's lines (the handle is closed), or null for binary, oversized and non-regular files. */
async function searchableLines({ handle, info }: { handle: FileHandle; info: FileInfo }): Promise<string[] | null> {
  try {
    if (info.kind !== "file" || info.size > MAX_FILE_BYTES) return null;
    const bytes = await handle.readFile();
    if (bytes.subarray(0, 8192).includes(0)) return null;
    const lines = bytes.toString("utf-8").replace(/\r\n?/g, "\n").split("\n");
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
    return lines;
  } catch {
    return null;
  } finally {
    await handle.close().catch(() => undefined);
  }
}
