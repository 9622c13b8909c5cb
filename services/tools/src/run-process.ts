import { join, resolve } from "node:path";
import type { TraceSpan } from "@fleet/protocol";
import {
  applyTopology,
  checkServerAtStartup,
  connectFleet,
  createLogger,
  createOtlpSpanExporter,
  isOtlpTraceExportConfigured,
  loadEnvOrExit,
  natsAuthFromEnv,
  startOpsServer,
  topologyFromEnv,
} from "@fleet/runtime";
import { Registry } from "prom-client";
import { ToolsEnv } from "./config.js";
import type { AnyToolDefinition } from "./define-tool.js";
import { loadMcpConfig } from "./mcp/mcp-config.js";
import { createMcpToolSource, type McpToolSource } from "./mcp/mcp-tool-source.js";
import { createToolRunner } from "./runner/create-tool-runner.js";
import { defaultRunnerId } from "./runner/runner-id.js";
import type { ToolRunner } from "./runner/tool-runner.js";
import { openSandbox } from "./sandbox/open-sandbox.js";
import { sandboxSettingsFromEnv } from "./sandbox/sandbox-settings.js";

/**
 * The process shell of a tool runner: reads `ToolsEnv`, connects, starts the runner and its ops
 * server, and on SIGTERM/SIGINT stops pulling, lets running calls finish for
 * FLEET_SHUTDOWN_GRACE_MS, aborts the rest, drains the connection and exits 0. Exits 1 with a clear
 * message when the server is unusable or a tool conflicts with a live registration.
 * `tools` may depend on the parsed environment (FLEET_TOOLS).
 */
export async function runToolRunnerProcess(opts: {
  service?: string;
  tools: readonly AnyToolDefinition[] | ((env: ToolsEnv) => readonly AnyToolDefinition[]);
}): Promise<void> {
  const service = opts.service ?? "fleet-tools";
  const env = loadEnvOrExit(service, ToolsEnv);
  const base = createLogger(service, { level: env.LOG_LEVEL });
  const logger = env.FLEET_TENANT ? base.child({ tenant: env.FLEET_TENANT }) : base;
  const fail = (message: string): never => {
    logger.fatal({ evt: "runner_exit" }, message);
    logger.flush();
    process.stderr.write(`${service}: ${message}\n`);
    process.exit(1);
  };
  const ownTools = typeof opts.tools === "function" ? opts.tools(env) : opts.tools;
  const runnerId = env.FLEET_RUNNER_ID || defaultRunnerId();
  const workspaceRoot = env.FLEET_TENANT
    ? resolve(env.FLEET_WORKSPACE, env.FLEET_TENANT)
    : resolve(env.FLEET_WORKSPACE);
  const sandboxSettings = sandboxSettingsFromEnv(env, process.env);
  const sandbox = await openSandbox(sandboxSettings);
  let mcp: McpToolSource | undefined;
  let runner: ToolRunner | undefined;
  if (env.FLEET_MCP_CONFIG) {
    const loaded = await loadMcpConfig(env.FLEET_MCP_CONFIG);
    if (!loaded.ok) fail(`FLEET_MCP_CONFIG: ${loaded.error}`);
    else {
      mcp = createMcpToolSource({
        config: loaded.config,
        sandbox,
        workDir: join(workspaceRoot, ".mcp"),
        logger,
        backoff: {
          baseMs: env.FLEET_MCP_RESTART_MS,
          capMs: Math.max(env.FLEET_MCP_RESTART_MS, env.FLEET_MCP_RESTART_MAX_MS),
        },
        onToolsChanged: (mcpTools) => {
          void runner
            ?.setTools([...ownTools, ...mcpTools])
            .then((out) => {
              if (!out.ok) logger.error({ evt: "mcp_tools_refused", error: out.error }, out.error);
            })
            .catch((err) => logger.error({ evt: "mcp_tools_update_failed", err }, "serving MCP tools failed"));
        },
      });
      await mcp.start();
    }
  }
  const tools = [...ownTools, ...(mcp?.tools() ?? [])];
  const { nc } = await connectFleet({
    role: "tools",
    url: env.NATS_URL,
    name: `${service}-${runnerId}`,
    auth: natsAuthFromEnv(process.env),
    onPermissionError: (line, detail) => logger.error({ evt: "nats_permission_denied", ...detail }, line),
  }).catch((err: Error) => fail(err.message));
  const server = await checkServerAtStartup(nc, logger);
  if (!server.ok) fail(server.error);
  // Creates the streams with FLEET_STREAM_REPLICAS, fleet_config with FLEET_PARTITIONS and fleet_leases
  // with FLEET_LEASE_TTL_MS (the same settings as loop and store), before the runner applies the topology.
  await applyTopology(nc, { ...topologyFromEnv(env), logger }).catch((err: Error) => fail(err.message));
  const registry = new Registry();
  // The runner's spans of traced calls (change 46), only with an OTLP endpoint configured (OTEL_EXPORTER_OTLP_*).
  const spanExporter = isOtlpTraceExportConfigured()
    ? await createOtlpSpanExporter({
        defaultServiceName: "fleet-tools",
        onExportError: (error, spans) => logger.warn({ evt: "span_export_failed", spans, error }, "span export failed"),
      })
    : undefined;
  runner = createToolRunner({
    nc,
    tools,
    runnerId,
    topology: topologyFromEnv(env),
    workspaceRoot,
    workspaceMode: env.FLEET_WORKSPACE_MODE,
    workspaceQuotaBytes: env.FLEET_WORKSPACE_QUOTA_MB * 1024 * 1024,
    workspaceSweepMs: env.FLEET_WORKSPACE_SWEEP_MS,
    logger,
    ...(env.FLEET_TOOL_ACK_WAIT_MS > 0 ? { ackWaitMs: env.FLEET_TOOL_ACK_WAIT_MS } : {}),
    concurrency: env.FLEET_TOOL_CONCURRENCY,
    abortGraceMs: env.FLEET_TOOL_ABORT_GRACE_MS,
    maxArgsBytes: env.FLEET_MAX_TOOL_ARGS_BYTES,
    maxRecordBytes: env.FLEET_MAX_TOOL_RESULT_BYTES,
    sandbox,
    metrics: registry,
    ...(spanExporter
      ? {
          onCallSpan: (span: TraceSpan) => spanExporter.enqueue([span]),
        }
      : {}),
  });
  const started = await runner.start();
  // Tools listed while the runner was starting.
  if (mcp && started.ok) mcp.refresh();
  if (!started.ok) {
    await nc.drain().catch(() => undefined);
    fail(started.error);
  }
  const ops = await startOpsServer({
    port: env.FLEET_OPS_PORT,
    host: env.FLEET_OPS_HOST,
    ready: () => runner?.isReady() ?? false,
    registry,
  });
  logger.info({ evt: "ops_listening", port: ops.port, tools: tools.map((t) => t.name) }, "tool runner ready");

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ evt: "runner_stopping", signal }, "stopping");
    await runner?.stop({ graceMs: env.FLEET_SHUTDOWN_GRACE_MS });
    await mcp?.stop();
    await ops.close();
    await spanExporter?.shutdown();
    await nc.drain().catch(() => undefined);
    logger.flush();
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}
