import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type JSONRPCMessage,
  ListRootsRequestSchema,
  McpError,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type { AnyToolDefinition, ToolContext, ToolOutput } from "../define-tool.js";
import type { ProcessSandbox } from "../sandbox/process-sandbox.js";
import { isStdioServer, type McpServerEntry } from "./mcp-config.js";
import { buildMcpToolOutput, type McpCallResult } from "./mcp-result.js";
import { buildMcpToolDefinition, type McpToolInfo } from "./mcp-tool-definition.js";
import { DEFAULT_RESTART_BACKOFF, decideRestartDelay, type RestartBackoff } from "./restart-backoff.js";
import { SandboxStdioTransport } from "./sandbox-stdio-transport.js";

/** Key of the call's idempotency key (`<sessionId>.<toolCallId>`) in a `tools/call` request's `_meta`. */
export const IDEMPOTENCY_META_KEY = "fleet/idempotencyKey";

export type McpServerStatus =
  | { state: "starting"; restarts: number }
  | { state: "up"; restarts: number; since: number; pid?: number }
  | { state: "down"; restarts: number; reason: string; retryAt: number }
  | { state: "stopped"; restarts: number };

export interface McpServerConnection {
  readonly name: string;
  /** Connects and lists the tools once (resolves either way; a failed start is retried with backoff). */
  start(): Promise<void>;
  /** Ends the server (its process, for stdio) and every retry. Idempotent. */
  stop(): Promise<void>;
  /** The server's tools as Fleet tools: the last listing, kept while the server is down. */
  tools(): readonly AnyToolDefinition[];
  status(): McpServerStatus;
}

export interface McpServerConnectionOptions {
  name: string;
  entry: McpServerEntry;
  sandbox: ProcessSandbox;
  /** A stdio server without `cwd` works in `<workDir>/<name>` (created). */
  workDir: string;
  logger: Logger;
  /** Called after the tools changed (a new listing differs from the last one). */
  onToolsChanged: () => void;
  backoff?: RestartBackoff;
  /** Sees every JSON-RPC message sent to and received from the server (protocol traces, tests). */
  onMessage?: (direction: "sent" | "received", message: JSONRPCMessage) => void;
  /** Timeout of connecting and of each listing. Default 30 s. */
  requestTimeoutMs?: number;
  now?: () => number;
}

const FOREVER_MS = 2_147_483_647;

/** An error's message with its cause's (fetch says only "fetch failed"; the cause says why). */
function describeError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
  return cause && !message.includes(cause) ? `${message}: ${cause}` : message;
}
const CLIENT_INFO = { name: "fleet-tools", version: "0.1.0" };

/**
 * One configured MCP server: connected (a stdio server started under the runner's sandbox), its
 * tools listed on each (re)connect and on `notifications/tools/list_changed`, restarted with capped
 * backoff when it dies (an HTTP server: reconnected when a call finds it gone). A call while it is
 * down fails at once with an error naming the server, the reason and the next attempt.
 */
export function createMcpServerConnection(opts: McpServerConnectionOptions): McpServerConnection {
  const { name, entry } = opts;
  const now = opts.now ?? Date.now;
  const backoff = opts.backoff ?? DEFAULT_RESTART_BACKOFF;
  const timeout = opts.requestTimeoutMs ?? 30_000;
  const log = opts.logger.child({ mcpServer: name });
  let status: McpServerStatus = { state: "starting", restarts: 0 };
  let client: Client | undefined;
  let generation = 0;
  let attempt = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  let stopped = false;
  let tools: readonly AnyToolDefinition[] = [];
  let listedKey = "";
  let listing: Promise<void> = Promise.resolve();

  const cwd = isStdioServer(entry) ? resolve(entry.cwd ?? join(opts.workDir, name)) : undefined;

  /** `transport`, with every message it carries shown to `onMessage`. */
  function observed(transport: Transport): Transport {
    const onMessage = opts.onMessage;
    if (!onMessage) return transport;
    const send = transport.send.bind(transport);
    transport.send = (message, sendOpts) => {
      onMessage("sent", message);
      return send(message, sendOpts);
    };
    return new Proxy(transport, {
      set(target, prop, value) {
        if (prop === "onmessage" && typeof value === "function") {
          const handler = value as NonNullable<Transport["onmessage"]>;
          target.onmessage = (message, extra) => {
            onMessage("received", message);
            handler(message, extra);
          };
          return true;
        }
        return Reflect.set(target, prop, value);
      },
    });
  }

  function makeTransport(kind: "streamable" | "sse"): Transport {
    if (isStdioServer(entry)) {
      return new SandboxStdioTransport({
        sandbox: opts.sandbox,
        argv: [entry.command, ...entry.args],
        workspace: cwd as string,
        env: entry.env,
        network: entry.network,
        readOnlyPaths: entry.readOnlyPaths,
        onStderr: (line) => log.debug({ evt: "mcp_server_stderr", line }, "MCP server stderr"),
      });
    }
    const requestInit = { headers: entry.headers };
    return kind === "streamable"
      ? new StreamableHTTPClientTransport(new URL(entry.url), { requestInit })
      : new SSEClientTransport(new URL(entry.url), { requestInit });
  }

  async function relist(c: Client, gen: number): Promise<void> {
    const infos: McpToolInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await c.listTools(cursor ? { cursor } : {}, { timeout });
      infos.push(...(page.tools as McpToolInfo[]));
      cursor = page.nextCursor;
    } while (cursor);
    if (gen !== generation) return;
    // A tool that must run as an MCP task cannot be called with a plain `tools/call`.
    const callable = infos.filter((t) => t.execution?.taskSupport !== "required");
    const key = JSON.stringify(callable);
    if (key === listedKey) return;
    listedKey = key;
    tools = callable.map((info) => buildMcpToolDefinition(name, info, callTool));
    log.info({ evt: "mcp_tools_listed", tools: tools.map((t) => t.name) }, "MCP server tools listed");
    opts.onToolsChanged();
  }

  /** Lists after any listing under way; rejects with its failure (logged), which the chain survives. */
  const queueRelist = (c: Client, gen: number) => {
    const run = listing.then(() => relist(c, gen));
    listing = run.catch((err) => log.warn({ evt: "mcp_relist_failed", err }, "listing the MCP server's tools failed"));
    return run;
  };

  async function connect(kind: "streamable" | "sse" = "streamable"): Promise<void> {
    const gen = ++generation;
    if (cwd) await mkdir(cwd, { recursive: true });
    const c = new Client(CLIENT_INFO, { capabilities: cwd ? { roots: { listChanged: false } } : {} });
    if (cwd) {
      c.setRequestHandler(ListRootsRequestSchema, async () => ({
        roots: [{ uri: pathToFileURL(cwd).href, name: "workspace" }],
      }));
    }
    c.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      log.info({ evt: "mcp_tools_list_changed" }, "MCP server says its tools changed");
      await queueRelist(c, gen).catch(() => undefined);
    });
    c.onclose = () => {
      // Only a connection in use: one that failed to connect is dealt with by whoever started it.
      if (client !== c || gen !== generation || stopped) return;
      markDown(isStdioServer(entry) ? "its process exited" : "the connection closed");
    };
    const transport = makeTransport(kind);
    try {
      await c.connect(observed(transport), { timeout });
    } catch (err) {
      await c.close().catch(() => undefined);
      // No such endpoint for POST (an older server's `/sse`); an authentication failure is reported as it is.
      const noStreamable = err instanceof StreamableHTTPError && (err.code === 404 || err.code === 405);
      if (kind === "streamable" && !isStdioServer(entry) && noStreamable) {
        // A server of the 2024-11-05 revision speaks HTTP+SSE: the SDK's backwards-compatible path.
        log.info({ evt: "mcp_sse_fallback" }, "no streamable HTTP endpoint; trying HTTP+SSE");
        return connect("sse");
      }
      throw err;
    }
    client = c;
    await queueRelist(c, gen);
    if (client !== c) throw new Error("the connection closed while the tools were being listed");
    const pid = transport instanceof SandboxStdioTransport ? transport.pid : undefined;
    status = { state: "up", restarts: status.restarts, since: now(), ...(pid !== undefined ? { pid } : {}) };
    attempt = 0;
    log.info({ evt: "mcp_server_up", restarts: status.restarts, pid }, "MCP server connected");
  }

  function markDown(reason: string) {
    if (stopped || status.state === "down") return;
    const old = client;
    client = undefined;
    generation++;
    void old?.close().catch(() => undefined);
    const delay = decideRestartDelay(attempt++, backoff);
    status = { state: "down", restarts: status.restarts, reason, retryAt: now() + delay };
    log.warn({ evt: "mcp_server_down", reason, retryInMs: delay }, "MCP server down; restarting");
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      if (stopped) return;
      status = { state: "starting", restarts: status.restarts + 1 };
      connect().catch((err) => markDown(`restart failed: ${describeError(err)}`));
    }, delay);
  }

  function downText(): string {
    if (status.state === "down") {
      const wait = Math.max(0, status.retryAt - now());
      return `MCP server ${name} is down (${status.reason}); restarting in ${wait} ms`;
    }
    return `MCP server ${name} is ${status.state === "stopped" ? "stopped" : "starting"}`;
  }

  async function callTool(mcpName: string, args: unknown, ctx: ToolContext): Promise<ToolOutput> {
    const c = client;
    if (!c || status.state !== "up") throw new Error(downText());
    const _meta: Record<string, unknown> = {
      [IDEMPOTENCY_META_KEY]: `${ctx.sessionId}.${ctx.toolCallId}`,
      ...ctx.traceContext,
    };
    try {
      const result = await c.callTool(
        { name: mcpName, arguments: (args ?? {}) as Record<string, unknown>, _meta },
        undefined,
        {
          signal: ctx.signal,
          timeout: FOREVER_MS,
          onprogress: (p) => {
            ctx.extendDeadline?.();
            ctx.onUpdate({
              progress: p.progress,
              ...(p.total !== undefined ? { total: p.total } : {}),
              ...(p.message !== undefined ? { message: p.message } : {}),
            });
          },
        },
      );
      return buildMcpToolOutput(name, mcpName, result as McpCallResult);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      const message = describeError(err);
      if (client !== c || !(err instanceof McpError) || /connection closed/i.test(message)) {
        if (!isStdioServer(entry)) markDown(`a call failed: ${message}`);
        throw new Error(`MCP server ${name} went away during the call (${message}); it is being restarted`);
      }
      throw new Error(`MCP server ${name}: ${message}`);
    }
  }

  return {
    name,
    async start() {
      try {
        await connect();
      } catch (err) {
        markDown(`start failed: ${describeError(err)}`);
      }
    },
    async stop() {
      stopped = true;
      if (restartTimer) clearTimeout(restartTimer);
      generation++;
      status = { state: "stopped", restarts: status.restarts };
      await client?.close().catch(() => undefined);
      client = undefined;
    },
    tools: () => tools,
    status: () => status,
  };
}
