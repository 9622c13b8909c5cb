import {
  DEFAULT_MAX_TOOL_RESULT_BYTES,
  encodeToolResultRecord,
  MAX_TOOL_RESULT_BYTES_SETTING,
  type ToolFinalRecord,
} from "@fleet/protocol";
import type { BlobSink } from "../define-tool.js";

const MAX_INLINE_DETAILS_BYTES = 64 * 1024;

const byteLength = (s: string) => Buffer.byteLength(s, "utf-8");

/**
 * Makes a final record fit in one message. A record over `maxBytes` is stored whole (as JSON) in the
 * blob store; the message keeps the head of its text blocks with a note naming the blob, images
 * that do not fit become a note, and `details` gains `fullOutput` (a BlobRef). A record that does
 * not encode at all (a tool returned invalid content) becomes an error result. Never throws except
 * for blob-store I/O errors.
 */
export async function limitFinalRecord(
  record: ToolFinalRecord,
  blobs: BlobSink,
  toolName: string,
  maxBytes = DEFAULT_MAX_TOOL_RESULT_BYTES,
): Promise<ToolFinalRecord> {
  const encoded = encodeToolResultRecord(record);
  if (!encoded.ok && !/exceeds the limit/.test(encoded.error)) {
    return {
      kind: "result",
      content: [{ type: "text", text: `Tool ${toolName} returned an invalid result: ${encoded.error}` }],
      details: {},
      isError: true,
    };
  }
  if (encoded.ok && encoded.bytes.byteLength <= maxBytes) return record;

  const full = JSON.stringify({ content: record.content, details: record.details });
  const ref = await blobs.put("result.json", full, { mimeType: "application/json" });
  const detailsJson = record.details === undefined ? "" : (JSON.stringify(record.details) ?? "");
  const details =
    byteLength(detailsJson) <= MAX_INLINE_DETAILS_BYTES
      ? isPlainObject(record.details)
        ? { ...record.details, fullOutput: ref }
        : record.details === undefined
          ? { fullOutput: ref }
          : { value: record.details, fullOutput: ref }
      : { fullOutput: ref, detailsTruncated: true };
  const totalText = record.content.reduce((n, b) => n + (b.type === "text" ? byteLength(b.text) : 0), 0);
  let budget = maxBytes - MAX_INLINE_DETAILS_BYTES - 4096;
  for (let attempt = 0; attempt < 8; attempt++) {
    let left = budget;
    const content: ToolFinalRecord["content"] = [];
    for (const block of record.content) {
      if (block.type === "text") {
        const kept = headBytes(block.text, Math.max(0, left));
        left -= byteLength(kept);
        content.push({ ...block, text: kept });
      } else {
        const size = byteLength(block.data);
        if (size <= left) {
          content.push(block);
          left -= size;
        } else {
          content.push({
            type: "text",
            text: `[Image (${block.mimeType}, ${size} bytes of base64) omitted: over the result limit]`,
          });
        }
      }
    }
    const shownText = content.reduce((n, b) => n + (b.type === "text" ? byteLength(b.text) : 0), 0);
    content.push({
      type: "text",
      text: `[Output truncated: the result is ${byteLength(full)} bytes, over the ${maxBytes}-byte limit (${MAX_TOOL_RESULT_BYTES_SETTING}); ${shownText} of ${totalText} text bytes shown. Full output: blob ${ref.bucket}/${ref.name}]`,
    });
    const candidate: ToolFinalRecord = { ...record, content, details };
    const check = encodeToolResultRecord(candidate);
    if (check.ok && check.bytes.byteLength <= maxBytes) return candidate;
    budget = Math.floor(budget / 2);
  }
  return {
    kind: "result",
    content: [
      {
        type: "text",
        text: `[Output omitted: over the ${maxBytes}-byte limit (${MAX_TOOL_RESULT_BYTES_SETTING}). Full output: blob ${ref.bucket}/${ref.name}]`,
      },
    ],
    details: { fullOutput: ref },
    isError: record.isError,
  };
}

function headBytes(text: string, max: number): string {
  const buf = Buffer.from(text, "utf-8");
  if (buf.byteLength <= max) return text;
  let end = max;
  while (end > 0 && ((buf[end] ?? 0) & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString("utf-8");
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
