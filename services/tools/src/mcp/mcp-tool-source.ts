import type { Logger } from "pino";
import type { AnyToolDefinition } from "../define-tool.js";
import type { ProcessSandbox } from "../sandbox/process-sandbox.js";
import type { McpConfig } from "./mcp-config.js";
import { createMcpServerConnection, type McpServerConnection, type McpServerStatus } from "./mcp-server-connection.js";
import type { RestartBackoff } from "./restart-backoff.js";

/** Every configured MCP server's tools, as one changing set of Fleet tools. */
export interface McpToolSource {
  /** Starts every server (in parallel) and resolves once each connected or failed its first start. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The tools of every server now (a down server's last listing included: its calls fail at once). */
  tools(): AnyToolDefinition[];
  status(): Record<string, McpServerStatus>;
  /** Calls `onToolsChanged` with the tools now (after the runner started: changes it may have missed). */
  refresh(): void;
}

export function createMcpToolSource(opts: {
  config: McpConfig;
  sandbox: ProcessSandbox;
  /** Working directories of stdio servers without `cwd`: `<workDir>/<server>`. */
  workDir: string;
  logger: Logger;
  /** Called (after `start` resolved) whenever a server's tools changed. */
  onToolsChanged: (tools: AnyToolDefinition[]) => void;
  backoff?: RestartBackoff;
}): McpToolSource {
  let started = false;
  const servers: McpServerConnection[] = Object.entries(opts.config.mcpServers).map(([name, entry]) =>
    createMcpServerConnection({
      name,
      entry,
      sandbox: opts.sandbox,
      workDir: opts.workDir,
      logger: opts.logger,
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
      onMessage: (direction, message) => {
        // Methods and ids only: arguments and results stay out of the log.
        const { method, id } = message as { method?: string; id?: string | number };
        opts.logger.debug({ evt: "mcp_message", mcpServer: name, direction, method, id }, "MCP message");
      },
      onToolsChanged: () => {
        if (started) opts.onToolsChanged(tools());
      },
    }),
  );
  const tools = () => servers.flatMap((s) => [...s.tools()]);
  return {
    async start() {
      await Promise.all(servers.map((s) => s.start()));
      started = true;
    },
    async stop() {
      await Promise.all(servers.map((s) => s.stop()));
    },
    tools,
    status: () => Object.fromEntries(servers.map((s) => [s.name, s.status()])),
    refresh: () => opts.onToolsChanged(tools()),
  };
}
