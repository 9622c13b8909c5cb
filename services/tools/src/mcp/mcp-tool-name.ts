import { createHash } from "node:crypto";

const MAX_NAME = 64;
const HASH_CHARS = 8;

/**
 * The Fleet name of an MCP server's tool: `mcp__<server>__<tool>`, every character outside
 * `[A-Za-z0-9_-]` replaced by `_`. A name over 64 characters keeps its head and ends with `_`
 * and 8 hex characters of the SHA-256 of `<server>/<tool>`, so two long names stay distinct.
 */
export function buildMcpToolName(server: string, tool: string): string {
  const full = `mcp__${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, "_");
  const clean = full === `mcp__${server}__${tool}`;
  if (full.length <= MAX_NAME && clean) return full;
  const hash = createHash("sha256").update(`${server}/${tool}`).digest("hex").slice(0, HASH_CHARS);
  if (full.length <= MAX_NAME - HASH_CHARS - 1) return `${full}_${hash}`;
  return `${full.slice(0, MAX_NAME - HASH_CHARS - 1)}_${hash}`;
}
