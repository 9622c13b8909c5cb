// Output truncation with pi's limits and notes: 2000 lines or 50 KB, whichever comes first.

export const DEFAULT_MAX_LINES = 2000;
export const DEFAULT_MAX_BYTES = 50 * 1024;
/** grep cuts each matching line to this many characters. */
export const GREP_MAX_LINE_LENGTH = 500;

export interface Truncation {
  content: string;
  truncated: boolean;
  truncatedBy: "lines" | "bytes" | null;
  totalLines: number;
  totalBytes: number;
  outputLines: number;
  outputBytes: number;
  /** Tail mode only: the one line kept was cut from its start. */
  lastLinePartial: boolean;
  /** Head mode only: the first line alone exceeds the byte limit (content is empty). */
  firstLineExceedsLimit: boolean;
  maxLines: number;
  maxBytes: number;
}

export interface TruncateOptions {
  maxLines?: number;
  maxBytes?: number;
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes}B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)}KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)}MB`;
}

const byteLength = (s: string) => Buffer.byteLength(s, "utf-8");

function untruncated(content: string, totalLines: number, maxLines: number, maxBytes: number): Truncation {
  const totalBytes = byteLength(content);
  return {
    content,
    truncated: false,
    truncatedBy: null,
    totalLines,
    totalBytes,
    outputLines: totalLines,
    outputBytes: totalBytes,
    lastLinePartial: false,
    firstLineExceedsLimit: false,
    maxLines,
    maxBytes,
  };
}

/** Keeps the first lines (file reads). Never returns a partial line. */
export function truncateHead(content: string, opts: TruncateOptions = {}): Truncation {
  const maxLines = opts.maxLines ?? DEFAULT_MAX_LINES;
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const lines = content.split("\n");
  const totalBytes = byteLength(content);
  if (lines.length <= maxLines && totalBytes <= maxBytes) return untruncated(content, lines.length, maxLines, maxBytes);
  const base = { truncated: true, totalLines: lines.length, totalBytes, lastLinePartial: false, maxLines, maxBytes };
  if (byteLength(lines[0] ?? "") > maxBytes) {
    return { ...base, content: "", truncatedBy: "bytes", outputLines: 0, outputBytes: 0, firstLineExceedsLimit: true };
  }
  const kept: string[] = [];
  let bytes = 0;
  let truncatedBy: "lines" | "bytes" = "lines";
  for (let i = 0; i < lines.length && i < maxLines; i++) {
    const line = lines[i] ?? "";
    const size = byteLength(line) + (i > 0 ? 1 : 0);
    if (bytes + size > maxBytes) {
      truncatedBy = "bytes";
      break;
    }
    kept.push(line);
    bytes += size;
  }
  const out = kept.join("\n");
  return {
    ...base,
    content: out,
    truncatedBy,
    outputLines: kept.length,
    outputBytes: byteLength(out),
    firstLineExceedsLimit: false,
  };
}

/** Keeps the last lines (command output). The only line kept may be cut from its start. */
export function truncateTail(content: string, opts: TruncateOptions = {}): Truncation {
  const maxLines = opts.maxLines ?? DEFAULT_MAX_LINES;
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const lines = content.split("\n");
  const totalBytes = byteLength(content);
  if (lines.length <= maxLines && totalBytes <= maxBytes) return untruncated(content, lines.length, maxLines, maxBytes);
  const kept: string[] = [];
  let bytes = 0;
  let truncatedBy: "lines" | "bytes" = "lines";
  let lastLinePartial = false;
  for (let i = lines.length - 1; i >= 0 && kept.length < maxLines; i--) {
    const line = lines[i] ?? "";
    const size = byteLength(line) + (kept.length > 0 ? 1 : 0);
    if (bytes + size > maxBytes) {
      truncatedBy = "bytes";
      if (kept.length === 0) {
        const tail = tailBytes(line, maxBytes);
        kept.unshift(tail);
        bytes = byteLength(tail);
        lastLinePartial = true;
      }
      break;
    }
    kept.unshift(line);
    bytes += size;
  }
  const out = kept.join("\n");
  return {
    content: out,
    truncated: true,
    truncatedBy,
    totalLines: lines.length,
    totalBytes,
    outputLines: kept.length,
    outputBytes: byteLength(out),
    lastLinePartial,
    firstLineExceedsLimit: false,
    maxLines,
    maxBytes,
  };
}

function tailBytes(s: string, maxBytes: number): string {
  const buf = Buffer.from(s, "utf-8");
  if (buf.length <= maxBytes) return s;
  let start = buf.length - maxBytes;
  while (start < buf.length && ((buf[start] ?? 0) & 0xc0) === 0x80) start++;
  return buf.subarray(start).toString("utf-8");
}

/** Cuts one line to `maxChars` with pi's `... [truncated]` suffix. */
export function truncateLine(line: string, maxChars = GREP_MAX_LINE_LENGTH): { text: string; wasTruncated: boolean } {
  if (line.length <= maxChars) return { text: line, wasTruncated: false };
  return { text: `${line.slice(0, maxChars)}... [truncated]`, wasTruncated: true };
}
