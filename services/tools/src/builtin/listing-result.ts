import type { ToolOutput } from "../define-tool.js";
import { DEFAULT_MAX_BYTES, formatSize, truncateHead } from "./truncate.js";

/** A notice appended to a listing in pi's bracketed form, with the `details` field that records it. */
export interface ListingNotice {
  text: string;
  detail: readonly [key: string, value: unknown];
}

/**
 * The output of ls, find and grep: the listing cut to 50 KB, then `[notice. notice]` in this order:
 * the tool's own limit notice, the byte limit, any trailing notices. `details` holds one field per
 * notice and is omitted when there is none.
 */
export function listingResult(
  body: string,
  limit: ListingNotice | undefined,
  trailing: readonly ListingNotice[] = [],
): ToolOutput {
  const truncation = truncateHead(body, { maxLines: Number.MAX_SAFE_INTEGER });
  const notices: ListingNotice[] = [
    ...(limit ? [limit] : []),
    ...(truncation.truncated
      ? [{ text: `${formatSize(DEFAULT_MAX_BYTES)} limit reached`, detail: ["truncation", truncation] as const }]
      : []),
    ...trailing,
  ];
  const text = notices.length
    ? `${truncation.content}\n\n[${notices.map((n) => n.text).join(". ")}]`
    : truncation.content;
  if (notices.length === 0) return { content: [{ type: "text", text }] };
  return { content: [{ type: "text", text }], details: Object.fromEntries(notices.map((n) => n.detail)) };
}
