import { readFile } from "node:fs/promises";
import { z } from "zod";

/** A server started as a process speaking MCP over stdio, under the runner's sandbox. */
export const McpStdioServer = z
  .object({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    /** Variables of the server's process, besides the sandbox's own (the runner's are never passed). */
    env: z.record(z.string(), z.string()).default({}),
    /** Working directory, bound read-write (the only writable place). Default: a directory of its own under the workspace root. */
    cwd: z.string().min(1).optional(),
    /** Fleet's addition: the server's process may use the network (default: none, like `bash`). */
    network: z.boolean().default(false),
    /** Fleet's addition: host paths bound read-only into the sandbox (the server's code, data it reads). */
    readOnlyPaths: z.array(z.string().min(1)).default([]),
  })
  .strict();
export type McpStdioServer = z.infer<typeof McpStdioServer>;

/** A server reached over streamable HTTP (`headers` carry its authentication). */
export const McpHttpServer = z
  .object({
    url: z.url(),
    headers: z.record(z.string(), z.string()).default({}),
  })
  .strict();
export type McpHttpServer = z.infer<typeof McpHttpServer>;

export const McpServerEntry = z.union([McpStdioServer, McpHttpServer]);
export type McpServerEntry = z.infer<typeof McpServerEntry>;

/** A server's name: a part of its tools' names, so only `[A-Za-z0-9_-]`. */
export const McpServerName = z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, "a server name is 1-32 of [A-Za-z0-9_-]");

/** The format desktop and editor clients use: `{"mcpServers": {"<name>": {command, args, env, cwd} | {url, headers}}}`. */
export const McpConfig = z.object({ mcpServers: z.record(McpServerName, McpServerEntry) });
export type McpConfig = z.infer<typeof McpConfig>;

export const isStdioServer = (entry: McpServerEntry): entry is McpStdioServer => "command" in entry;

/** Parses a configuration's text. Errors are data, naming the offending field. */
export function parseMcpConfig(text: string): { ok: true; config: McpConfig } | { ok: false; error: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `not JSON: ${(err as Error).message}` };
  }
  const parsed = McpConfig.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, error: `${issue?.path.map(String).join(".") || "root"}: ${issue?.message ?? "invalid"}` };
  }
  return { ok: true, config: parsed.data };
}

/** Reads FLEET_MCP_CONFIG (a file path). Errors are data. */
export async function loadMcpConfig(
  path: string,
): Promise<{ ok: true; config: McpConfig } | { ok: false; error: string }> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    return { ok: false, error: `cannot read ${path}: ${(err as Error).message}` };
  }
  const parsed = parseMcpConfig(text);
  return parsed.ok ? parsed : { ok: false, error: `${path}: ${parsed.error}` };
}
