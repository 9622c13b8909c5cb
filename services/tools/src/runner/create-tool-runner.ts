import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import {
  DEFAULT_MAX_TOOL_RESULT_BYTES,
  decodeToolCallRequest,
  isSessionId,
  isToolCallId,
  OBJECT_STORES,
  parseJson,
  parseToolCancelSubject,
  STREAMS,
  type ToolCallRequest,
  type ToolFinalRecord,
  toolCallConsumer,
  toolCallMsgId,
  toolErrorText,
} from "@fleet/protocol";
import { applyTopology, createLogger, ensureConsumer } from "@fleet/runtime";
import { type Consumer, type ConsumerMessages, type JetStreamClient, type JsMsg, jetstream } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { type AnyToolDefinition, toRegistration } from "../define-tool.js";
import { openSandbox } from "../sandbox/open-sandbox.js";
import type { ProcessSandbox } from "../sandbox/process-sandbox.js";
import type { SandboxSettings } from "../sandbox/sandbox-settings.js";
import { ensureWorkspace } from "../workspace-path.js";
import { type CallId, errorRecord, finalMsgId, isWrongLastSequence, publishRecord } from "./call-records.js";
import { type CallState, createCallStateReader } from "./call-state.js";
import { decideClaim, decideDelivery } from "./claim-decision.js";
import { executeCall } from "./execute-call.js";
import { limitFinalRecord } from "./limit-record.js";
import { blobPrefix, createNatsBlobSink } from "./nats-blob-sink.js";
import { createRunnerMetrics, type DeliveryOutcome, noMetrics } from "./runner-metrics.js";
import { createPresenceHeartbeat, type PresenceHeartbeat } from "./runner-presence.js";
import { registerTools, schemaHash } from "./tool-registry.js";

export interface ToolRunnerOptions {
  nc: NatsConnection;
  tools: readonly AnyToolDefinition[];
  /** `FLEET_WORKSPACE`: each session works in `<workspaceRoot>/<sessionId>` (created on demand). */
  workspaceRoot: string;
  /** `shared`: every session works in `workspaceRoot` itself. Default `per-session`. */
  workspaceMode?: "per-session" | "shared";
  /** Unique per process. Default `tools-<host>-<pid>-<random>`. */
  runnerId?: string;
  logger?: Logger;
  /** `ack_wait` of the `tool-<name>` consumers (set on existing ones too). Default: the presence TTL. */
  ackWaitMs?: number;
  /** Calls of one tool running at once on this runner. Default 16. */
  concurrency?: number;
  /** Minimum interval between `update` records of one call. Default 100 ms. */
  updateIntervalMs?: number;
  /** After an abort, how long a tool may take to settle before its abort result is published. Default 1 s. */
  abortGraceMs?: number;
  /** A call whose `started` record belongs to another live runner is looked at again after this delay. Default 1 s. */
  busyRetryMs?: number;
  /** FLEET_MAX_TOOL_RESULT_BYTES: larger final records are truncated and stored whole in `fleet_blobs` (default and maximum 1 MiB - 16 KiB). */
  maxRecordBytes?: number;
  /** FLEET_MAX_TOOL_ARGS_BYTES: calls with larger `args` (as JSON) get an error result naming the limit. Default 512 KiB. */
  maxArgsBytes?: number;
  /**
   * How tools start processes: settings probed once at `start()` (default: bubblewrap with the
   * default limits), or an already opened sandbox.
   */
  sandbox?: SandboxSettings | ProcessSandbox;
  /** Prometheus registry for the runner's metrics. */
  metrics?: Registry;
  now?: () => number;
}

export type StartOutcome = { ok: true } | { ok: false; error: string };

export interface ToolRunner {
  readonly runnerId: string;
  /**
   * Creates the topology if needed, announces presence, registers the tools and starts pulling.
   * Resolves `ok: false` (nothing pulled, presence removed) when a tool conflicts with a live
   * registration; rejects on NATS errors.
   */
  start(): Promise<StartOutcome>;
  /**
   * Stops pulling, lets running calls finish for `graceMs` (default 10 s), then aborts the rest:
   * `retry: "safe"` calls are handed back to the queue (nak) for another runner, `retry: "never"`
   * calls get the runner-lost error result. Finally removes the runner's presence. Idempotent.
   */
  stop(opts?: { graceMs?: number }): Promise<void>;
  activeCalls(): number;
  isReady(): boolean;
}

interface InFlight {
  /** The latest delivery of the call's message (redeliveries replace it). */
  msg: JsMsg;
  seq: number;
  controller: AbortController;
  done: Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const CANCEL_MEMORY_MS = 10 * 60_000;
const CANCEL_MEMORY_MAX = 10_000;

export function defaultRunnerId(): string {
  const host = hostname()
    .replace(/[^A-Za-z0-9_-]/g, "-")
    .slice(0, 40);
  return `tools-${host}-${process.pid}-${randomBytes(3).toString("hex")}`;
}

/** A tool runner: serves `tools` from their shared work queues. See services/tools/README.md. */
export function createToolRunner(opts: ToolRunnerOptions): ToolRunner {
  const runnerId = opts.runnerId ?? defaultRunnerId();
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(runnerId)) throw new Error(`invalid runnerId ${JSON.stringify(runnerId)}`);
  const names = new Set<string>();
  for (const t of opts.tools) {
    if (names.has(t.name)) throw new Error(`tool ${t.name} is defined twice`);
    names.add(t.name);
  }
  const now = opts.now ?? Date.now;
  const logger = (opts.logger ?? createLogger("fleet-tools")).child({ runnerId });
  const concurrency = opts.concurrency ?? 16;
  const updateIntervalMs = opts.updateIntervalMs ?? 100;
  const abortGraceMs = opts.abortGraceMs ?? 1_000;
  const busyRetryMs = opts.busyRetryMs ?? 1_000;
  const maxRecordBytes = Math.min(opts.maxRecordBytes ?? DEFAULT_MAX_TOOL_RESULT_BYTES, DEFAULT_MAX_TOOL_RESULT_BYTES);
  const workspaceMode = opts.workspaceMode ?? "per-session";
  const metrics = opts.metrics ? createRunnerMetrics(opts.metrics) : noMetrics;

  const js: JetStreamClient = jetstream(opts.nc);
  const inflight = new Map<string, InFlight>();
  const recentCancels = new Map<string, number>();
  const fetches = new Set<ConsumerMessages>();
  const pumps: Promise<void>[] = [];
  const slotWaiters = new Map<string, Array<() => void>>();
  const activeByTool = new Map<string, number>();
  const workspaces = new Map<string, string>();
  let presence: PresenceHeartbeat | undefined;
  let cancelSub: Subscription | undefined;
  let readCallState: ReturnType<typeof createCallStateReader> | undefined;
  let blobStore: Awaited<ReturnType<Objm["open"]>> | undefined;
  let sandbox: ProcessSandbox | undefined;
  let workingIntervalMs = 10_000;
  let presenceTtlMs = 15_000;
  let started = false;
  let stopping = false;
  let hardStopped = false;
  let stopped: Promise<void> | undefined;

  async function start(): Promise<StartOutcome> {
    if (started) throw new Error("tool runner already started");
    started = true;
    sandbox = opts.sandbox && "start" in opts.sandbox ? opts.sandbox : await openSandbox(opts.sandbox);
    logSandbox(logger, sandbox);
    const topo = await applyTopology(opts.nc, { logger });
    readCallState = createCallStateReader(topo.jsm);
    blobStore = await new Objm(opts.nc).open(OBJECT_STORES.blobs.name);
    const ttl = (await topo.kv.leases.status()).ttl;
    if (!ttl) logger.warn({ evt: "presence_without_ttl" }, "fleet_leases has no TTL: a dead runner stays live forever");
    if (ttl) presenceTtlMs = ttl;
    presence = createPresenceHeartbeat({
      kv: topo.kv.leases,
      runnerId,
      tools: Object.fromEntries(
        opts.tools.map((t) => [t.name, { version: t.version, schemaHash: schemaHash(toRegistration(t)) }]),
      ),
      heartbeatMs: ttl ? Math.max(100, Math.floor(ttl / 3)) : 5_000,
      nc: opts.nc,
      now,
      logger,
    });
    await presence.start();
    const registered = await registerTools({
      kv: topo.kv.tools,
      tools: opts.tools,
      runnerId,
      liveRunners: () => (presence as PresenceHeartbeat).liveRunners(),
      now,
      logger,
    });
    if (!registered.ok) {
      await presence.stop();
      stopping = true;
      hardStopped = true;
      return registered;
    }
    for (const tool of opts.tools) {
      // ack_wait = presence TTL: a dead runner's call comes back about when its presence expires;
      // a live runner marks its calls in progress every third of it.
      const config = toolCallConsumer(tool.name, opts.ackWaitMs ?? presenceTtlMs);
      const drift = await ensureConsumer(topo.jsm, STREAMS.toolCalls.name, config);
      for (const line of drift) logger.warn({ evt: "consumer_drift", drift: line }, "consumer drift");
      if (drift.some((line) => line.includes(": ack_wait is "))) {
        // A consumer made with another ack_wait (an older version's 30 s): take this runner's.
        await topo.jsm.consumers.update(STREAMS.toolCalls.name, config.durable_name, { ack_wait: config.ack_wait });
      }
      const info = await topo.jsm.consumers.info(STREAMS.toolCalls.name, config.durable_name);
      workingIntervalMs = Math.min(
        workingIntervalMs,
        Math.max(100, Math.floor((info.config.ack_wait ?? 30_000_000_000) / 1_000_000 / 3)),
      );
    }
    cancelSub = opts.nc.subscribe("fleet.tool.cancel.*.*", { callback: (_err, msg) => onCancel(msg.subject) });
    // The server knows the subscription before start() resolves: no cancel is missed after that.
    await opts.nc.flush();
    for (const tool of opts.tools) pumps.push(pump(tool));
    logger.info({ evt: "runner_started", tools: [...names], concurrency }, "tool runner started");
    return { ok: true };
  }

  function onCancel(subject: string) {
    const parsed = parseToolCancelSubject(subject);
    if (!parsed) return;
    const key = toolCallMsgId(parsed.sessionId, parsed.toolCallId);
    const entry = inflight.get(key);
    if (entry) {
      logger.info({ evt: "tool_call_cancel", sessionId: parsed.sessionId, toolCallId: parsed.toolCallId }, "cancel");
      entry.controller.abort("cancel");
      return;
    }
    // Best effort for a cancel that overtakes its call: remember it for a while.
    recentCancels.set(key, now());
    if (recentCancels.size > CANCEL_MEMORY_MAX) {
      for (const [k, at] of recentCancels) {
        if (recentCancels.size <= CANCEL_MEMORY_MAX / 2 && now() - at < CANCEL_MEMORY_MS) break;
        recentCancels.delete(k);
      }
    }
  }

  const active = (tool: string) => activeByTool.get(tool) ?? 0;

  function freeSlot(tool: string) {
    const waiters = slotWaiters.get(tool);
    const wake = waiters?.shift();
    wake?.();
  }

  function waitForSlot(tool: string): Promise<void> {
    return new Promise((resolve) => {
      const list = slotWaiters.get(tool) ?? [];
      list.push(resolve);
      slotWaiters.set(tool, list);
    });
  }

  /** Pulls while there are free slots: one outstanding fetch for the free slots at a time. */
  async function pump(tool: AnyToolDefinition): Promise<void> {
    let consumer: Consumer | undefined;
    while (!stopping) {
      if (!consumer) {
        try {
          consumer = await js.consumers.get(STREAMS.toolCalls.name, `tool-${tool.name}`);
        } catch (err) {
          // NATS is restarting or paused: keep trying; a runner never exits over an outage.
          logger.warn(
            { evt: "consumer_unavailable", tool: tool.name, err },
            "tool call consumer unavailable; retrying",
          );
          await sleep(500);
          continue;
        }
      }
      const free = concurrency - active(tool.name);
      if (free <= 0) {
        await waitForSlot(tool.name);
        continue;
      }
      let batch: ConsumerMessages | undefined;
      try {
        batch = await consumer.fetch({ max_messages: free, expires: 5_000 });
        fetches.add(batch);
        if (stopping) batch.stop();
        for await (const m of batch) {
          if (stopping) {
            m.nak();
            continue;
          }
          activeByTool.set(tool.name, active(tool.name) + 1);
          metrics.active(tool.name, 1);
          void handleDelivery(m, tool)
            .catch((err) =>
              // Unacked: the consumer redelivers it after ack_wait.
              logger.error({ evt: "tool_delivery_failed", tool: tool.name, err }, "tool call delivery failed"),
            )
            .finally(() => {
              activeByTool.set(tool.name, active(tool.name) - 1);
              metrics.active(tool.name, -1);
              freeSlot(tool.name);
            });
        }
      } catch (err) {
        if (stopping) break;
        logger.warn({ evt: "fetch_failed", tool: tool.name, err }, "pulling tool calls failed; retrying");
        await sleep(500);
      } finally {
        if (batch) fetches.delete(batch);
      }
    }
  }

  async function handleDelivery(m: JsMsg, tool: AnyToolDefinition): Promise<void> {
    const decoded = decodeToolCallRequest(m.data);
    const log = logger.child({
      tool: tool.name,
      streamSeq: m.seq,
      deliveryCount: m.info.deliveryCount,
      ...(decoded.ok ? { sessionId: decoded.value.sessionId, toolCallId: decoded.value.toolCallId } : {}),
    });
    const key = decoded.ok ? toolCallMsgId(decoded.value.sessionId, decoded.value.toolCallId) : "";
    const current = decoded.ok ? inflight.get(key) : undefined;
    const first = decideDelivery({ decoded, toolName: tool.name, runningSeq: current?.seq, seq: m.seq });
    if (first.kind === "invalid") {
      log.error({ evt: "tool_call_invalid", error: first.error }, "invalid tool call request dropped");
      const ident = decoded.ok ? decoded.value : readIdentity(m.data);
      if (ident) {
        // Only for a call nothing was written for yet (expected subject sequence 0): a bad copy must not
        // overwrite the outcome of a real call with the same ids.
        await publishRecord(js, runnerId, ident, errorRecord(`Invalid tool call request: ${first.error}`), {
          msgID: finalMsgId(ident),
          expectLastSeq: 0,
        }).catch((err) => log.warn({ evt: "invalid_request_unanswered", err }, "invalid request left unanswered"));
      }
      await ackSafely(m, log);
      metrics.delivery(tool.name, "bad_request");
      return;
    }
    if (first.kind === "keep_working" && current) {
      current.msg = m;
      m.working();
      return;
    }
    if (first.kind === "after_running" && current) {
      await current.done;
      log.info({ evt: "tool_call_duplicate" }, "a second request of a call this runner ran; acked");
      await ackSafely(m, log);
      metrics.delivery(tool.name, "duplicate");
      return;
    }
    if (!decoded.ok) return;
    const req = decoded.value;
    let finish!: () => void;
    const entry: InFlight = {
      msg: m,
      seq: m.seq,
      controller: new AbortController(),
      done: new Promise<void>((resolve) => {
        finish = resolve;
      }),
    };
    inflight.set(key, entry);
    const cancelledAt = recentCancels.get(key);
    if (cancelledAt !== undefined) {
      recentCancels.delete(key);
      if (now() - cancelledAt < CANCEL_MEMORY_MS) entry.controller.abort("cancel");
    }
    const working = setInterval(() => entry.msg.working(), workingIntervalMs);
    try {
      metrics.delivery(tool.name, await processCall(entry, req, tool, log));
    } catch (err) {
      log.error({ evt: "tool_call_failed", err }, "tool call handling failed; handed back to the queue");
      metrics.delivery(tool.name, "failed");
      try {
        entry.msg.nak(busyRetryMs);
      } catch {
        // Connection gone: ack wait redelivers it.
      }
    } finally {
      clearInterval(working);
      inflight.delete(key);
      finish();
    }
  }

  async function processCall(
    entry: InFlight,
    req: ToolCallRequest,
    tool: AnyToolDefinition,
    log: Logger,
  ): Promise<DeliveryOutcome> {
    const call: CallId = { sessionId: req.sessionId, toolCallId: req.toolCallId };
    const reader = readCallState as NonNullable<typeof readCallState>;
    // Optimistic first attempt: assume nothing was written for the call. The claim below expects
    // subject sequence 0, so if anything exists it fails (10071) and the real state is read.
    let state: CallState = { kind: "none", seq: 0 };
    for (let attempt = 0; ; attempt++) {
      const owner = state.kind === "running" ? state.runnerId : undefined;
      const decision = decideClaim({
        state,
        runnerId,
        toolName: tool.name,
        retry: tool.retry,
        ownerSeenAt: owner && owner !== runnerId ? await (presence as PresenceHeartbeat).seenAt(owner) : undefined,
        presenceTtlMs,
        busyRetryMs,
        now: now(),
      });
      try {
        switch (decision.kind) {
          case "duplicate":
            log.info({ evt: "tool_call_duplicate" }, "call already has a result; not run again");
            await ackSafely(entry.msg, log);
            return "duplicate";
          case "busy":
            log.info({ evt: "tool_call_busy", owner: decision.owner }, "call is running on another live runner");
            entry.msg.nak(decision.delayMs);
            return "busy";
          case "fail":
            await publishRecord(js, runnerId, call, errorRecord(decision.text), {
              msgID: finalMsgId(call),
              expectLastSeq: decision.expectLastSeq,
            });
            log.warn(
              { evt: "tool_runner_lost", previousRunner: decision.previousRunner },
              "runner lost while executing; error result given",
            );
            await ackSafely(entry.msg, log);
            return "runner_lost";
          case "claim":
            if (decision.expectLastSeq > 0) {
              log.warn(
                { evt: "tool_call_rerun", previousRunner: decision.rerunOf },
                "re-running a call whose runner is gone (retry: safe)",
              );
            }
            await publishRecord(
              js,
              runnerId,
              call,
              { kind: "started", runnerId, ts: now() },
              { expectLastSeq: decision.expectLastSeq },
            );
        }
        break;
      } catch (err) {
        if (!isWrongLastSequence(err) || attempt >= 3) throw err;
        state = await reader(call);
      }
    }
    return runClaimed(entry, req, tool, call, log);
  }

  async function runClaimed(
    entry: InFlight,
    req: ToolCallRequest,
    tool: AnyToolDefinition,
    call: CallId,
    log: Logger,
  ): Promise<DeliveryOutcome> {
    const startedAt = now();
    const publishedAt = Math.floor(entry.msg.info.timestampNanos / 1_000_000);
    const deadlineAt = req.deadline > 0 ? req.deadline : startedAt + tool.timeoutMs;
    const deadlineMs = req.deadline > 0 ? Math.max(0, req.deadline - publishedAt) : tool.timeoutMs;
    const blobs = createNatsBlobSink(
      blobStore as NonNullable<typeof blobStore>,
      blobPrefix(req.sessionId, req.toolCallId),
    );

    let chain: Promise<unknown> = Promise.resolve();
    let pending: { partial: unknown } | undefined;
    let timer: NodeJS.Timeout | undefined;
    let lastUpdate = 0;
    let closed = false;
    const flush = () => {
      timer = undefined;
      if (!pending || closed) return;
      const partialResult = pending.partial;
      pending = undefined;
      lastUpdate = now();
      chain = chain.then(() =>
        publishRecord(js, runnerId, call, { kind: "update", partialResult }).catch((err) =>
          log.debug({ evt: "update_dropped", err }, "update record not published"),
        ),
      );
    };
    const onUpdate = (partial: unknown) => {
      if (closed) return;
      pending = { partial };
      if (!timer) timer = setTimeout(flush, Math.max(0, updateIntervalMs - (now() - lastUpdate)));
    };

    let workspace: string;
    try {
      workspace = await workspaceOf(req.sessionId);
    } catch (err) {
      await publishFinal(call, errorRecord(`Cannot prepare the workspace: ${(err as Error).message}`), log);
      await ackSafely(entry.msg, log);
      return "error";
    }
    const outcome = await executeCall({
      tool,
      args: req.args,
      sessionId: req.sessionId,
      toolCallId: req.toolCallId,
      workspace,
      logger: log,
      blobs,
      sandbox: sandbox as ProcessSandbox,
      deadlineAt,
      deadlineMs,
      now,
      signal: entry.controller.signal,
      onUpdate,
      abortGraceMs,
      ...(opts.maxArgsBytes !== undefined ? { maxArgsBytes: opts.maxArgsBytes } : {}),
    });
    // Trailing edge of the throttle: the last progress is published before the result.
    if (timer) clearTimeout(timer);
    flush();
    closed = true;
    await chain;
    metrics.duration(tool.name, (now() - startedAt) / 1000);

    let record: ToolFinalRecord = outcome.record;
    let result: DeliveryOutcome =
      outcome.kind === "aborted" ? (outcome.cause === "deadline" ? "deadline" : "aborted") : "ok";
    if (outcome.kind === "done") {
      result = outcome.validationFailed ? "invalid_args" : outcome.record.isError ? "error" : "ok";
    }
    if (outcome.kind === "aborted" && outcome.cause === "shutdown") {
      if (tool.retry === "safe") {
        log.info({ evt: "tool_call_requeued" }, "runner stopping: call handed back to the queue");
        entry.msg.nak();
        return "requeued";
      }
      record = errorRecord(toolErrorText.runnerLost(tool.name));
      result = "runner_lost";
    }
    try {
      record = await limitFinalRecord(record, blobs, tool.name, maxRecordBytes);
    } catch (err) {
      record = errorRecord(
        `Tool ${tool.name} output is over the result limit and could not be stored: ${(err as Error).message}`,
      );
    }
    await publishFinal(call, record, log);
    log.info(
      { evt: "tool_call_done", outcome: result, ms: now() - startedAt, isError: record.isError },
      "tool call done",
    );
    await ackSafely(entry.msg, log);
    return result;
  }

  /** The session's workspace, created on first use; later calls only check that it still exists. */
  async function workspaceOf(sessionId: string): Promise<string> {
    const cached = workspaces.get(sessionId);
    if (cached !== undefined && existsSync(cached)) return cached;
    const dir = await ensureWorkspace(opts.workspaceRoot, sessionId, workspaceMode);
    if (workspaces.size >= 10_000) workspaces.clear();
    workspaces.set(sessionId, dir);
    return dir;
  }

  /** Publishes the final record (msgID-deduplicated), retrying transient failures until stopped. */
  async function publishFinal(call: CallId, record: ToolFinalRecord, log: Logger): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await publishRecord(js, runnerId, call, record, { msgID: finalMsgId(call) });
        return;
      } catch (err) {
        if (hardStopped || attempt >= 30) throw err;
        log.warn({ evt: "result_publish_retry", attempt, err }, "publishing the result failed; retrying");
        await sleep(Math.min(2_000, 50 * 2 ** attempt));
      }
    }
  }

  async function ackSafely(m: JsMsg, log: Logger) {
    try {
      if (!(await m.ackAck()))
        log.warn({ evt: "ack_unconfirmed" }, "ack not confirmed; a redelivery will find the result");
    } catch (err) {
      log.warn({ evt: "ack_failed", err }, "ack failed; a redelivery will find the result");
    }
  }

  async function stop(stopOpts: { graceMs?: number } = {}): Promise<void> {
    if (stopped) return stopped;
    stopped = (async () => {
      stopping = true;
      for (const batch of fetches) batch.stop();
      for (const [tool, waiters] of slotWaiters) {
        for (const wake of waiters.splice(0)) wake();
        slotWaiters.delete(tool);
      }
      await Promise.allSettled(pumps);
      const graceEnd = now() + (stopOpts.graceMs ?? 10_000);
      while (inflight.size > 0 && now() < graceEnd) await sleep(20);
      if (inflight.size > 0) {
        logger.warn({ evt: "runner_abort_running", calls: inflight.size }, "grace over: aborting running calls");
        for (const entry of inflight.values()) entry.controller.abort("shutdown");
        const abortEnd = now() + abortGraceMs + 5_000;
        while (inflight.size > 0 && now() < abortEnd) await sleep(20);
      }
      hardStopped = true;
      cancelSub?.unsubscribe();
      await presence?.stop();
      logger.info({ evt: "runner_stopped" }, "tool runner stopped");
    })();
    return stopped;
  }

  return {
    runnerId,
    start,
    stop,
    activeCalls: () => inflight.size,
    isReady: () => started && !stopping && cancelSub !== undefined,
  };
}

/** One line at start saying how tools' processes run; a warning when unconfined, an error when they cannot run. */
function logSandbox(logger: Logger, sandbox: ProcessSandbox): void {
  const status = sandbox.status;
  if (status.mode === "bwrap") {
    logger.info({ evt: "sandbox_ready", ...status }, "tool processes run in a bubblewrap sandbox");
  } else if (status.mode === "off") {
    logger.warn(
      { evt: "sandbox_off" },
      "FLEET_SANDBOX=off: tool processes run unconfined, as the runner's user, with its file system and network",
    );
  } else {
    logger.error(
      { evt: "sandbox_unavailable", check: status.check, reason: status.reason },
      `the process sandbox is unavailable (check ${status.check} failed): bash and other process tools refuse to run`,
    );
  }
}

/** Session and call ids of an otherwise invalid request, when they are readable. */
function readIdentity(data: Uint8Array): CallId | null {
  const json = parseJson(data);
  if (!json.ok || typeof json.value !== "object" || json.value === null) return null;
  const { sessionId, toolCallId } = json.value as { sessionId?: unknown; toolCallId?: unknown };
  return isSessionId(sessionId) && isToolCallId(toolCallId) ? { sessionId, toolCallId } : null;
}
