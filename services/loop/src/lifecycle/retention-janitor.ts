// Retention (`FLEET_RETENTION_DAYS`): one janitor per tenant, on the worker holding the lease
// `loop.janitor`, archives the sessions that ended and stayed idle for longer, in bounded batches.
import {
  decodeEvent,
  encodeCommand,
  eventStreamOfPartition,
  type FleetCommand,
  parseJson,
  partitionOf,
  type SessionSummary,
  StoreReply,
  subjects,
  validate,
} from "@fleet/protocol";
import { type Logger, sleep } from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { startLeasedTask } from "../leased-task.js";
import type { LoopMetrics } from "../metrics.js";
import { lastLifecycleRecord } from "./lifecycle-records.js";

export interface RetentionSettings {
  /** Sessions whose last event is older than this are archived. */
  idleMs: number;
  /** Sessions asked to archive per batch. */
  batchSize: number;
  /** Pause between two passes over the idle sessions. */
  intervalMs: number;
  /** How long a batch waits for its sessions' outcomes before it counts the rest as pending. */
  batchTimeoutMs: number;
}

export interface RetentionJanitor {
  /** One pass now (tests and the timer): batches until no idle session is left. Never throws. */
  pass(): Promise<void>;
  stop(): Promise<void>;
}

/** The janitor's lease key in `fleet_leases` (one holder per tenant, among the loop workers). */
export const JANITOR_LEASE_KEY = "loop.janitor";

/** Requester named in the janitor's `archive_session` commands. */
export const retentionRequester = (days: number) => `retention (FLEET_RETENTION_DAYS=${days})`;

export function startRetentionJanitor(opts: {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  leases: KV;
  workerId: string;
  leaseTtlMs: number;
  partitions: number;
  /** K, to name the event streams (default 1). */
  groups?: number;
  settings: RetentionSettings;
  /** `by` of the archive commands. */
  requester: string;
  now: () => number;
  logger: Logger;
  metrics: LoopMetrics;
}): RetentionJanitor & { start(): Promise<void> } {
  const log = opts.logger.child({ janitor: "retention" });
  const { settings } = opts;

  const listIdle = async (cursor: string | undefined) => {
    const request = { before: opts.now() - settings.idleMs, limit: settings.batchSize, ...(cursor ? { cursor } : {}) };
    const reply = await opts.nc.request(subjects.store("list_idle"), JSON.stringify(request), { timeout: 10_000 });
    const json = parseJson(reply.data);
    const parsed = json.ok ? validate(StoreReply.list_idle, json.value) : json;
    if (!parsed.ok) throw new Error(`list_idle: ${parsed.error}`);
    if (!parsed.value.ok) throw new Error(`list_idle: ${parsed.value.code}: ${parsed.value.error}`);
    return parsed.value;
  };

  /** Sends `archive_session` to each session and waits for each outcome (archived or rejected). */
  async function archiveBatch(sessions: SessionSummary[]) {
    const sent = new Map<string, string>();
    for (const s of sessions) {
      const commandId = `retention-${s.sessionId}-${s.updatedAt}`;
      const command: FleetCommand = {
        type: "archive_session",
        id: commandId,
        sessionId: s.sessionId,
        by: opts.requester,
      };
      const encoded = encodeCommand(command);
      if (!encoded.ok) continue;
      const partition = partitionOf(s.sessionId, opts.partitions);
      await opts.js.publish(subjects.command(partition, s.sessionId), encoded.bytes, { msgID: commandId });
      sent.set(s.sessionId, commandId);
    }
    const counts = { archived: 0, rejected: 0, pending: 0 };
    const deadline = opts.now() + settings.batchTimeoutMs;
    while (sent.size > 0 && opts.now() < deadline && task.active()) {
      for (const [sessionId, commandId] of sent) {
        const outcome = await outcomeOf(sessionId, commandId).catch(() => undefined);
        if (outcome === undefined) continue;
        counts[outcome]++;
        sent.delete(sessionId);
      }
      if (sent.size > 0) await sleep(250);
    }
    counts.pending += sent.size;
    return counts;
  }

  async function outcomeOf(sessionId: string, commandId: string): Promise<"archived" | "rejected" | undefined> {
    if ((await lastLifecycleRecord(opts.jsm, sessionId, opts.groups))?.commandId === commandId) return "archived";
    const partition = partitionOf(sessionId, opts.partitions);
    const subject = subjects.event(partition, sessionId);
    const stream = eventStreamOfPartition(partition, opts.groups ?? 1);
    const last = await opts.jsm.direct.getMessage(stream, { last_by_subj: subject });
    const event = last ? decodeEvent(last.data) : undefined;
    if (event?.ok && event.value.type === "command_rejected" && event.value.commandId === commandId) return "rejected";
    return undefined;
  }

  async function runPass() {
    let cursor: string | undefined;
    for (;;) {
      if (!task.active()) return;
      const started = opts.now();
      const page = await listIdle(cursor);
      if (page.sessions.length > 0) {
        const counts = await archiveBatch(page.sessions);
        const ms = opts.now() - started;
        opts.metrics.retentionBatches.inc();
        opts.metrics.retentionBatchDuration.observe(ms / 1000);
        for (const [outcome, n] of Object.entries(counts)) opts.metrics.retentionSessions.inc({ outcome }, n);
        log.info(
          { evt: "retention_batch", candidates: page.sessions.length, ...counts, ms },
          "retention batch archived idle sessions",
        );
      }
      cursor = page.cursor;
      if (!cursor) return;
    }
  }

  const task = startLeasedTask({
    kv: opts.leases,
    leaseKey: JANITOR_LEASE_KEY,
    workerId: opts.workerId,
    ttlMs: opts.leaseTtlMs,
    everyMs: settings.intervalMs,
    now: opts.now,
    logger: log,
    pass: runPass,
    onAcquire: () =>
      log.info({ evt: "retention_janitor", idleMs: settings.idleMs, batch: settings.batchSize }, "retention janitor"),
    onFailed: (err) => log.warn({ evt: "retention_failed", err }, "retention pass failed; trying again later"),
  });

  return { start: task.start, pass: task.run, stop: task.stop };
}
