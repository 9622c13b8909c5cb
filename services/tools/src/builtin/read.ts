import { z } from "zod";
import { defineTool, type ToolOutput } from "../define-tool.js";
import { isMissing } from "../workspace/beneath.js";
import { throwIfAborted } from "./abort.js";
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, formatSize, truncateHead } from "./truncate.js";

export interface ReadToolOptions {
  /** Prefix each line with its 1-based number and a tab (`cat -n` style). Default true; false gives pi's plain text. */
  lineNumbers?: boolean;
  /** Images larger than this are not inlined; the full file goes to the blob store. Default 512 KB. */
  maxInlineImageBytes?: number;
}

const ReadArgs = z.object({
  path: z.string().describe("Path to the file to read (relative to the workspace, or absolute inside it)"),
  offset: z.number().int().min(1).optional().describe("Line number to start reading from (1-indexed)"),
  limit: z.number().int().min(1).optional().describe("Maximum number of lines to read"),
});

/** `read {path, offset?, limit?}`: text with line numbers and pi's truncation notes, or an image block. */
export function createReadTool(opts: ReadToolOptions = {}) {
  const lineNumbers = opts.lineNumbers ?? true;
  const maxImage = opts.maxInlineImageBytes ?? 512 * 1024;
  return defineTool({
    name: "read",
    description:
      `Read the contents of a file. Supports text files and images (jpg, png, gif, webp), which are returned as image content. ` +
      `Text output is truncated to ${DEFAULT_MAX_LINES} lines or ${DEFAULT_MAX_BYTES / 1024}KB (whichever is hit first); use offset/limit for large files.` +
      (lineNumbers ? " Each line is prefixed with its line number and a tab; the prefix is not part of the file." : ""),
    parameters: ReadArgs,
    retry: "safe",
    async execute({ path, offset, limit }, ctx): Promise<ToolOutput> {
      throwIfAborted(ctx.signal);
      const opened = await ctx.files
        .openRead(path)
        .catch((err) => (isMissing(err) ? Promise.reject(new Error(`File not found: ${path}`)) : Promise.reject(err)));
      const { handle, info } = opened;
      try {
        if (info.kind === "dir") throw new Error(`Path is a directory: ${path}. Use ls to list it.`);
        if (info.kind !== "file") throw new Error(`Not a regular file: ${path}`);
        const bytes = await handle.readFile();
        throwIfAborted(ctx.signal);
        const mimeType = detectImageMimeType(bytes);
        if (mimeType) {
          if (bytes.byteLength > maxImage) {
            const ref = await ctx.blobs.put(`read-${baseName(path)}`, bytes, { mimeType });
            return {
              content: [
                {
                  type: "text",
                  text: `Read image file [${mimeType}]\n[Image omitted: ${formatSize(bytes.byteLength)} exceeds the inline limit of ${formatSize(maxImage)}. Stored as blob ${ref.bucket}/${ref.name}.]`,
                },
              ],
              details: { fullOutput: ref },
            };
          }
          return {
            content: [
              { type: "text", text: `Read image file [${mimeType}]` },
              { type: "image", data: bytes.toString("base64"), mimeType },
            ],
          };
        }
        const text = bytes.toString("utf-8");
        throwIfAborted(ctx.signal);
        return readText(text, path, offset, limit, lineNumbers);
      } finally {
        await handle.close();
      }
    },
  });
}

function readText(
  text: string,
  path: string,
  offset: number | undefined,
  limit: number | undefined,
  lineNumbers: boolean,
): ToolOutput {
  const allLines = text.split("\n");
  const total = allLines.length;
  const start = offset ? offset - 1 : 0;
  if (start >= total) throw new Error(`Offset ${offset} is beyond end of file (${total} lines total)`);
  const end = limit !== undefined ? Math.min(start + limit, total) : total;
  const truncation = truncateHead(allLines.slice(start, end).join("\n"));
  const first = start + 1;
  const number = (content: string) => {
    if (!lineNumbers) return content;
    const lines = content.split("\n");
    // The empty "line" after a final newline is not a line of the file.
    if (total > 1 && lines[lines.length - 1] === "" && first + lines.length - 1 === total) lines.pop();
    return lines.map((line, i) => `${String(first + i).padStart(6)}\t${line}`).join("\n");
  };
  if (truncation.firstLineExceedsLimit) {
    const size = formatSize(Buffer.byteLength(allLines[start] ?? "", "utf-8"));
    return {
      content: [
        {
          type: "text",
          text: `[Line ${first} is ${size}, exceeds ${formatSize(DEFAULT_MAX_BYTES)} limit. Use bash: sed -n '${first}p' ${path} | head -c ${DEFAULT_MAX_BYTES}]`,
        },
      ],
      details: { truncation },
    };
  }
  if (truncation.truncated) {
    const last = first + truncation.outputLines - 1;
    const limitNote = truncation.truncatedBy === "lines" ? "" : ` (${formatSize(DEFAULT_MAX_BYTES)} limit)`;
    return {
      content: [
        {
          type: "text",
          text: `${number(truncation.content)}\n\n[Showing lines ${first}-${last} of ${total}${limitNote}. Use offset=${last + 1} to continue.]`,
        },
      ],
      details: { truncation },
    };
  }
  if (end < total) {
    return {
      content: [
        {
          type: "text",
          text: `${number(truncation.content)}\n\n[${total - end} more lines in file. Use offset=${end + 1} to continue.]`,
        },
      ],
    };
  }
  return { content: [{ type: "text", text: number(truncation.content) }] };
}

const baseName = (p: string) => p.split(/[\\/]/).pop() || "file";

/** Sniffs the first bytes: png, jpeg, gif and webp are images (pi's supported set). */
function detectImageMimeType(bytes: Buffer): string | undefined {
  const b = bytes.subarray(0, 12);
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    return "image/png";
  }
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "image/jpeg";
  if (
    b.length >= 6 &&
    (b.subarray(0, 6).toString("latin1") === "GIF87a" || b.subarray(0, 6).toString("latin1") === "GIF89a")
  ) {
    return "image/gif";
  }
  if (
    b.length >= 12 &&
    b.subarray(0, 4).toString("latin1") === "RIFF" &&
    b.subarray(8, 12).toString("latin1") === "WEBP"
  ) {
    return "image/webp";
  }
  return undefined;
}
