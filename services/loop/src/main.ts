import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { parseModelName, sessionConfigWith } from "@fleet/protocol";
import {
  applyTopology,
  checkServerAtStartup,
  connectFleet,
  createLogger,
  createOtlpSpanExporter,
  isOtlpTraceExportConfigured,
  loadEnvOrExit,
  natsAuthFromEnv,
  newId,
  redactUrl,
  startOpsServer,
  topologyFromEnv,
} from "@fleet/runtime";
import { getProviders } from "@mariozechner/pi-ai";
import type { NatsConnection } from "@nats-io/transport-node";
import { Registry } from "prom-client";
import { LoopEnv } from "./config.js";
import { parseScript, type StreamFn } from "./engine/index.js";
import { loadPluginHooks } from "./hooks.js";
import { startLoopWorker } from "./loop-worker.js";
import {
  createAnthropicStreamFn,
  createModelCatalog,
  type ModelCatalog,
  parseModelsJson,
  piAiProviders,
} from "./providers/index.js";
import { createRunTraceSink } from "./run-trace-sink.js";
import { createScriptedStreamFn, realSleep } from "./scripted-stream-fn.js";

const FALLBACK_SCRIPT = JSON.stringify({
  turns: [
    {
      text: "Fleet is running with its offline scripted model (no ANTHROPIC_API_KEY). Set FLEET_SCRIPT to a script file, or set ANTHROPIC_API_KEY to talk to Claude.",
    },
  ],
});

/** pi-ai's models with FLEET_MODELS (pi's models.json) merged in; exits on a file it cannot use. */
function loadModelCatalog(path: string): ModelCatalog {
  if (!path) return createModelCatalog(undefined, process.env);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    process.stderr.write(`fleet-loop: cannot read FLEET_MODELS ${path}: ${(err as Error).message}\n`);
    process.exit(2);
  }
  const parsed = parseModelsJson(text, new Set(getProviders()));
  if (!parsed.ok) {
    process.stderr.write(`fleet-loop: FLEET_MODELS ${path}: ${parsed.error}\n`);
    process.exit(2);
  }
  return createModelCatalog(parsed.value, process.env);
}

async function main() {
  const env = loadEnvOrExit("fleet-loop", LoopEnv);
  const workerId = env.FLEET_WORKER_ID || `loop-${hostname()}-${process.pid}`;
  const logger = createLogger("fleet-loop", { level: env.LOG_LEVEL }).child({
    workerId,
    ...(env.FLEET_TENANT ? { tenant: env.FLEET_TENANT } : {}),
  });
  const catalog = loadModelCatalog(env.FLEET_MODELS);
  if (env.FLEET_MODELS)
    logger.info({ evt: "models_loaded", file: env.FLEET_MODELS }, "FLEET_MODELS merged into pi-ai's models");
  const named = env.FLEET_DEFAULT_MODEL.includes("/") ? parseModelName(env.FLEET_DEFAULT_MODEL) : undefined;
  const provider = named?.provider ?? env.FLEET_PROVIDER ?? (env.ANTHROPIC_API_KEY ? "anthropic" : "scripted");
  if (provider === "scripted" && !env.FLEET_PROVIDER) {
    logger.warn("ANTHROPIC_API_KEY is not set: using the offline scripted model");
  }
  const defaultModel = {
    provider,
    modelId: provider === "scripted" ? "scripted-demo" : (named?.modelId ?? env.FLEET_DEFAULT_MODEL),
  };
  if (provider !== "anthropic" && provider !== "scripted" && !catalog.resolve(defaultModel)) {
    process.stderr.write(
      `fleet-loop: FLEET_DEFAULT_MODEL ${provider}/${defaultModel.modelId} is neither a pi-ai model nor in FLEET_MODELS\n`,
    );
    process.exit(2);
  }

  const providers: Record<string, StreamFn> = {
    ...piAiProviders({ catalog }),
    anthropic: createAnthropicStreamFn({
      ...(env.ANTHROPIC_API_KEY ? { apiKey: env.ANTHROPIC_API_KEY } : {}),
      ...(env.ANTHROPIC_BASE_URL ? { baseURL: env.ANTHROPIC_BASE_URL } : {}),
    }),
  };
  const scriptText = env.FLEET_SCRIPT ? readFileSync(env.FLEET_SCRIPT, "utf8") : FALLBACK_SCRIPT;
  const script = parseScript(scriptText);
  if (!script.ok) {
    process.stderr.write(`fleet-loop: FLEET_SCRIPT ${env.FLEET_SCRIPT} is invalid: ${script.error}\n`);
    process.exit(2);
  }
  providers.scripted = createScriptedStreamFn(script.value, { now: Date.now, sleep: realSleep });

  let pluginHooks: Awaited<ReturnType<typeof loadPluginHooks>> = [];
  try {
    pluginHooks = env.FLEET_PLUGINS ? await loadPluginHooks(env.FLEET_PLUGINS) : [];
  } catch (err) {
    process.stderr.write(`fleet-loop: could not load FLEET_PLUGINS: ${(err as Error).message}\n`);
    process.exit(2);
  }

  let nc: NatsConnection;
  try {
    ({ nc } = await connectFleet({
      role: "loop",
      url: env.NATS_URL,
      name: workerId,
      auth: natsAuthFromEnv(process.env),
      timeoutMs: 5_000,
      onPermissionError: (line, detail) => logger.error({ evt: "nats_permission_denied", ...detail }, line),
    }));
  } catch (err) {
    process.stderr.write(`fleet-loop: ${(err as Error).message}\n`);
    process.exit(1);
  }
  const server = await checkServerAtStartup(nc, logger);
  if (!server.ok) {
    process.stderr.write(`fleet-loop: ${server.error}\n`);
    process.exit(1);
  }
  // Creates the streams with FLEET_STREAM_REPLICAS before the worker applies (and checks) the topology.
  await applyTopology(nc, { ...topologyFromEnv(env), logger });
  const registry = new Registry();
  // Spans derived from the log (change 46), only with an OTLP endpoint configured (OTEL_EXPORTER_OTLP_*).
  const spanExporter = isOtlpTraceExportConfigured()
    ? await createOtlpSpanExporter({
        defaultServiceName: "fleet-loop",
        onExportError: (error, spans) => logger.warn({ evt: "span_export_failed", spans, error }, "span export failed"),
      })
    : undefined;
  const traces = spanExporter ? createRunTraceSink((spans) => spanExporter.enqueue(spans)) : undefined;
  const worker = await startLoopWorker({
    nc,
    workerId,
    partitions: env.FLEET_PARTITIONS,
    groups: env.FLEET_STREAM_GROUPS,
    leaseTtlMs: env.FLEET_LEASE_TTL_MS,
    shutdownGraceMs: env.FLEET_SHUTDOWN_GRACE_MS,
    sessionIdleMs: env.FLEET_SESSION_IDLE_MS,
    snapshotEvery: env.FLEET_SNAPSHOT_EVERY,
    toolPickupMs: env.FLEET_TOOL_PICKUP_MS,
    providers,
    modelInfo: (model) => catalog.info(model),
    pluginHooks,
    settings: {
      coalesceMs: env.FLEET_COALESCE_MS,
      coalesceDeltas: env.FLEET_COALESCE_DELTAS,
      hookTimeoutMs: env.FLEET_HOOK_TIMEOUT_MS,
      hookRecheckMs: env.FLEET_HOOK_RECHECK_MS,
      hookServers: env.FLEET_HOOK_SERVERS,
      toolTimeoutMs: env.FLEET_TOOL_TIMEOUT_MS,
      maxCommandBytes: env.FLEET_MAX_COMMAND_BYTES,
      maxInputBytes: env.FLEET_MAX_INPUT_BYTES,
      validateAppends: env.FLEET_VALIDATE_APPENDS,
      approvalTools: new Set(
        env.FLEET_APPROVAL_TOOLS.split(",")
          .map((s) => s.trim())
          .filter(Boolean),
      ),
      defaults: sessionConfigWith({
        model: defaultModel,
        systemPrompt: env.FLEET_SYSTEM_PROMPT,
      }),
    },
    logger,
    registry,
    newId: () => newId(),
    lifecycle: {
      ...(env.FLEET_ARCHIVE_DIR
        ? { archiveDir: env.FLEET_TENANT ? join(env.FLEET_ARCHIVE_DIR, env.FLEET_TENANT) : env.FLEET_ARCHIVE_DIR }
        : {}),
      retention: {
        days: env.FLEET_RETENTION_DAYS,
        batchSize: env.FLEET_RETENTION_BATCH,
        intervalMs: env.FLEET_RETENTION_INTERVAL_MS,
      },
      haltAfter: env.FLEET_LIFECYCLE_HALT_AFTER,
    },
    ...(traces ? { traces } : {}),
    ...(env.FLEET_SUBAGENTS
      ? {
          subAgents: {
            maxDepth: env.FLEET_SUBAGENT_MAX_DEPTH,
            maxFanOut: env.FLEET_SUBAGENT_MAX_FANOUT,
            closePolicy: env.FLEET_SUBAGENT_CLOSE_POLICY,
            timeoutMs: env.FLEET_SUBAGENT_TIMEOUT_MS,
            progressMs: env.FLEET_SUBAGENT_PROGRESS_MS,
          },
        }
      : {}),
    schedulerTickMs: env.FLEET_SCHEDULER_TICK_MS,
    schedulerHaltAfterPublish: env.FLEET_SCHEDULER_HALT_AFTER === "fire_published",
  });
  const ops = await startOpsServer({
    port: env.FLEET_OPS_PORT,
    host: env.FLEET_OPS_HOST,
    ready: () => worker.isReady(),
    registry,
  });
  logger.info(
    {
      evt: "loop_started",
      nats: redactUrl(env.NATS_URL),
      server: server.caps.version,
      partitions: worker.partitions,
      opsPort: ops.port,
      provider,
      spanExport: spanExporter !== undefined,
    },
    "loop worker started",
  );

  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ evt: "loop_stopping", signal }, "stopping");
    await worker.stop().catch((err) => logger.error({ err }, "stop failed"));
    await ops.close();
    await spanExporter?.shutdown();
    await nc.drain().catch(() => undefined);
    logger.flush();
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

main().catch((err) => {
  process.stderr.write(`fleet-loop: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
