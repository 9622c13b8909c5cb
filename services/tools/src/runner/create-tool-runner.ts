import { OBJECT_STORES, runnerToolSpan } from "@fleet/protocol";
import { applyTopology, createLogger, createStreamPublisher } from "@fleet/runtime";
import { jetstream } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import type { AnyToolDefinition } from "../define-tool.js";
import { toRegistration } from "../define-tool.js";
import { openSandbox } from "../sandbox/open-sandbox.js";
import { createCallConsumer } from "./call-consumer.js";
import { createCallStateReader } from "./call-state.js";
import { createCallWorkspaces } from "./call-workspaces.js";
import { createCancelListener } from "./cancel-listener.js";
import { claimCall } from "./claim-call.js";
import { drainCalls } from "./drain-calls.js";
import { ensureCallConsumers } from "./ensure-call-consumers.js";
import { createDeliveryHandler } from "./handle-delivery.js";
import { createInflightCalls } from "./inflight-calls.js";
import { logSandbox } from "./log-sandbox.js";
import { createResultPublisher } from "./result-publisher.js";
import { runClaimedCall } from "./run-claimed-call.js";
import { checkRunnerId, defaultRunnerId } from "./runner-id.js";
import { createRunnerMetrics, noMetrics } from "./runner-metrics.js";
import { createPresenceHeartbeat, type PresenceHeartbeat } from "./runner-presence.js";
import { consumerAckWaitMs, presenceHeartbeatMs, presenceTtlOf, workingIntervalMs } from "./runner-timing.js";
import { presenceTools, registerTools, schemaHash, toolNames } from "./tool-registry.js";
import { runnerSettings, type StartOutcome, type ToolRunner, type ToolRunnerOptions } from "./tool-runner.js";
import { createWorkspaceJanitor, type WorkspaceJanitor } from "./workspace-janitor.js";

/**
 * A tool runner: serves `tools` from their shared work queues (see services/tools/README.md).
 * This function only wires the adapters; the decisions are pure (`decideDelivery`, `decideClaim`,
 * `decideSettlement`, `decideDeadline`, runner-timing) and tested without a server.
 */
export function createToolRunner(opts: ToolRunnerOptions): ToolRunner {
  const runnerId = checkRunnerId(opts.runnerId ?? defaultRunnerId());
  const { tools, nc } = opts;
  const names = toolNames(tools);
  const { concurrency, abortGraceMs, busyRetryMs, ...settings } = runnerSettings(opts);
  const now = opts.now ?? Date.now;
  const logger = (opts.logger ?? createLogger("fleet-tools")).child({ runnerId });
  const metrics = opts.metrics ? createRunnerMetrics(opts.metrics) : noMetrics;
  const js = jetstream(nc);
  const inflight = createInflightCalls();
  const cancels = createCancelListener({ nc, running: (key) => inflight.get(key)?.controller, now, logger });
  const consumer = createCallConsumer({ js, tools, concurrency, metrics, logger });
  const records = createStreamPublisher(nc);
  const publisher = createResultPublisher({ publisher: records, runnerId, now, hardStopped: () => hardStopped });
  let presence: PresenceHeartbeat | undefined;
  let served: readonly AnyToolDefinition[] = tools;
  let reconfigure: ((next: readonly AnyToolDefinition[]) => Promise<StartOutcome>) | undefined;
  let reconfiguring: Promise<unknown> = Promise.resolve();
  let janitor: WorkspaceJanitor | undefined;
  let started = false;
  let stopping = false;
  let hardStopped = false;
  let stopped: Promise<void> | undefined;

  async function start(): Promise<StartOutcome> {
    if (started) throw new Error("tool runner already started");
    started = true;
    const sandbox = opts.sandbox && "start" in opts.sandbox ? opts.sandbox : await openSandbox(opts.sandbox);
    logSandbox(logger, sandbox);
    const topo = await applyTopology(nc, { ...opts.topology, logger });
    const readState = createCallStateReader(topo.jsm);
    const blobStore = await new Objm(nc).open(OBJECT_STORES.blobs.name);
    const ttl = (await topo.kv.leases.status()).ttl;
    if (!ttl) logger.warn({ evt: "presence_without_ttl" }, "fleet_leases has no TTL: a dead runner stays live forever");
    const presenceTtlMs = presenceTtlOf(ttl);
    const heartbeatMs = presenceHeartbeatMs(ttl);
    const heartbeat = createPresenceHeartbeat({
      kv: topo.kv.leases,
      runnerId,
      tools: presenceTools(tools),
      heartbeatMs,
      nc,
      now,
      logger,
    });
    presence = heartbeat;
    await heartbeat.start();
    const liveRunners = () => heartbeat.liveRunners();
    const registered = await registerTools({ kv: topo.kv.tools, tools, runnerId, liveRunners, now, logger });
    if (!registered.ok) {
      await heartbeat.stop();
      stopping = true;
      hardStopped = true;
      return registered;
    }
    const ackWaitMs = consumerAckWaitMs(opts.ackWaitMs, presenceTtlMs);
    // Without tools yet (an MCP runner whose servers are starting), the consumers made later get ackWaitMs.
    const workingMs = Math.min(
      await ensureCallConsumers({ jsm: topo.jsm, tools, ackWaitMs, logger }),
      workingIntervalMs([ackWaitMs * 1_000_000]),
    );
    await cancels.start();
    const claimDeps = { runnerId, readState, seenAt: heartbeat.seenAt, presenceTtlMs, busyRetryMs, publisher, now };
    const workspaceOf = createCallWorkspaces(opts.workspaceRoot, settings.workspaceMode, opts.workspaceQuotaBytes ?? 0);
    const runDeps = { ...settings, abortGraceMs, publisher, blobStore, sandbox, workspaceOf, metrics, now };
    const handleDelivery = createDeliveryHandler({
      inflight,
      publisher,
      cancelledEarly: cancels.cancelledEarly,
      claim: (call, tool, log) => claimCall(claimDeps, call, tool, log),
      run: async (entry, req, tool, log) => {
        const startMs = now();
        const outcome = await runClaimedCall(runDeps, entry, req, tool, log);
        const span = opts.onCallSpan && runnerToolSpan(req, { runnerId, startMs, endMs: now(), outcome });
        if (span) opts.onCallSpan?.(span);
        return outcome;
      },
      workingIntervalMs: workingMs,
      busyRetryMs,
      metrics,
      logger,
    });
    consumer.start(handleDelivery);
    reconfigure = async (next) => {
      const before = new Map(served.map((t) => [t.name, t]));
      const hashOf = (t: AnyToolDefinition) => `${t.version}/${schemaHash(toRegistration(t))}`;
      const changed = next.filter((t) => {
        const prev = before.get(t.name);
        return !prev || hashOf(prev) !== hashOf(t);
      });
      const nextNames = new Set(next.map((t) => t.name));
      if (changed.length === 0 && [...before.keys()].every((name) => nextNames.has(name))) {
        served = next;
        return { ok: true };
      }
      const errors: string[] = [];
      const accepted: AnyToolDefinition[] = [];
      for (const tool of changed) {
        const outcome = await registerTools({ kv: topo.kv.tools, tools: [tool], runnerId, liveRunners, now, logger });
        if (outcome.ok) accepted.push(tool);
        else errors.push(outcome.error);
      }
      await ensureCallConsumers({ jsm: topo.jsm, tools: accepted, ackWaitMs, logger });
      const refused = new Set(changed.filter((t) => !accepted.includes(t)).map((t) => t.name));
      served = next.filter((t) => !refused.has(t.name));
      const names = new Set(served.map((t) => t.name));
      await heartbeat.setTools(presenceTools(served));
      for (const tool of accepted) consumer.add(tool);
      for (const name of before.keys()) if (!names.has(name)) consumer.remove(name);
      logger.info(
        { evt: "runner_tools_changed", tools: [...names], changed: accepted.map((t) => t.name), refused: [...refused] },
        "served tools changed",
      );
      return errors.length === 0 ? { ok: true } : { ok: false, error: errors.join("; ") };
    };
    if (settings.workspaceMode === "per-session") {
      janitor = createWorkspaceJanitor({
        nc,
        jsm: topo.jsm,
        groups: topo.groups,
        root: opts.workspaceRoot,
        sweepMs: opts.workspaceSweepMs ?? 3_600_000,
        logger,
      });
      await janitor.start();
    }
    logger.info({ evt: "runner_started", tools: names, concurrency }, "tool runner started");
    return { ok: true };
  }

  function stop(stopOpts: { graceMs?: number } = {}): Promise<void> {
    stopped ??= (async () => {
      stopping = true;
      janitor?.stop();
      await consumer.stop();
      await drainCalls({ calls: inflight, graceMs: stopOpts.graceMs ?? 10_000, abortGraceMs, now, logger });
      hardStopped = true;
      cancels.stop();
      await presence?.stop();
      records.close();
      logger.info({ evt: "runner_stopped" }, "tool runner stopped");
    })();
    return stopped;
  }

  function setTools(next: readonly AnyToolDefinition[]): Promise<StartOutcome> {
    toolNames(next);
    const run = reconfiguring.then(() => {
      if (!reconfigure || stopping) return { ok: false as const, error: "the tool runner is not running" };
      return reconfigure(next);
    });
    reconfiguring = run.catch(() => undefined);
    return run;
  }

  return {
    runnerId,
    start,
    stop,
    setTools,
    tools: () => served,
    activeCalls: () => inflight.size(),
    isReady: () => started && !stopping && cancels.isListening(),
  };
}
