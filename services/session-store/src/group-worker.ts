import { eventStreamName, storeGroupConsumer } from "@fleet/protocol";
import type { Logger } from "@fleet/runtime";
import type { ConsumerMessages, JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import { type AppliedAnnouncer, changesOfBatch } from "./applied-notices.js";
import { deleteLegacyPartitionConsumers, prepareStoreConsumer } from "./consumer-control.js";
import { pendingOf, toEventRecord } from "./delivered-message.js";
import { createInbox } from "./inbox.js";
import { type ActiveNamespace, type NamespaceControl, startSeqOfGroup } from "./namespace.js";
import type { EventRecord, Projector } from "./projector.js";
import type { Slots } from "./slots.js";

/**
 * A pull of the group's consumer lasts this long, and the server heartbeats it every half of it.
 * Two missed heartbeats in a row (a pull the server dropped during a pause, a restart or an election)
 * close the consumer and the loop opens it again: a projection stands still for about this long at
 * most once the bus is back, where nats.js alone waits two heartbeats of its 30 s default.
 */
const CONSUME_EXPIRES_MS = 5_000;
const MISSED_HEARTBEATS_TO_REOPEN = 2;

export interface GroupWorkerOptions {
  /** The stream group this worker feeds, of `groups` (K), on a log of `partitions` (P). */
  group: number;
  groups: number;
  partitions: number;
  js: JetStreamClient;
  jsm: JetStreamManager;
  namespaces: NamespaceControl;
  projector: Projector;
  /** Shared by the workers of one process: how many batches are applied at once. */
  slots: Slots;
  logger: Logger;
  /** Most events applied in one batch. */
  maxBatch?: number;
  /** Idle wake-up interval: how soon a namespace switch is noticed without traffic. */
  idleMs?: number;
  onBatch?: (group: number, size: number, lastSeq: number) => void;
  /** Told of each batch once it is in the indexes and acked (the store's notices, change 74). */
  onApplied?: AppliedAnnouncer;
  /** Called when there is no active namespace (Redis lost its data): the worker pauses until one exists. */
  onNoNamespace?: () => void;
}

export interface GroupWorker {
  readonly group: number;
  /**
   * Events of the group's stream not applied yet, as the consumer last reported it: the server's pending
   * count on the newest delivered message, plus what was delivered and not yet applied. Costs no
   * request.
   */
  readonly pending: number;
  /** Stream sequence of the last event applied by this worker (0 before its first batch). */
  readonly appliedSeq: number;
  /** The namespace this worker feeds (undefined before the first batch loop). */
  readonly ns: string | undefined;
  /** Stops consuming, finishes the batch in progress, and naks what was received but not applied. */
  stop(): Promise<void>;
}

/**
 * Feeds one held stream group: pulls `store-g<g>` (unfiltered: every event of the group's stream,
 * in stream order, whatever its partition), applies batches to the active namespace, acks after
 * the writes. Before every batch it re-reads the active namespace; when that changed (a rebuild
 * switched, or Redis lost the control record) it moves its consumer to the namespace's `startSeq`
 * of the group once per namespace and group, so nothing acked into the old namespace is missing in
 * the new one. With no active namespace (Redis lost its data) it closes its consumer and waits for
 * the heal.
 */
export function startGroupWorker(opts: GroupWorkerOptions): GroupWorker {
  const { group, groups, logger } = opts;
  const stream = eventStreamName(group, groups);
  const durable = storeGroupConsumer(group).durable_name;
  const maxBatch = opts.maxBatch ?? 50_000;
  const idleMs = opts.idleMs ?? 500;
  const inbox = createInbox<JsMsg>();
  let messages: ConsumerMessages | undefined;
  let current: ActiveNamespace | undefined;
  /** The namespace this worker last applied to (kept while none is active), to announce a change of it. */
  let announcedNs: string | undefined;
  let stopping = false;
  let generation = 0;
  /** The newest delivered message: its reply subject carries the server's pending count (read on demand). */
  let newest: JsMsg | undefined;
  /** Events received and not applied yet, in the batches taken from the inbox. */
  let inFlight = 0;
  let appliedSeq = 0;

  async function closeConsumer() {
    const m = messages;
    messages = undefined;
    generation++;
    // Unknown until the next consumer delivers; if it has nothing to deliver, nothing is pending.
    newest = undefined;
    if (m) await m.close().catch(() => undefined);
    for (const msg of inbox.drain()) msg.nak();
  }

  async function openConsumer(active: ActiveNamespace) {
    await closeConsumer();
    const reset = !(await opts.namespaces.isReset(active.ns, group));
    const startSeq = startSeqOfGroup(active, group);
    const how = await prepareStoreConsumer(opts.jsm, { group, groups }, { startSeq, reset });
    if (reset) {
      // Only a log of one group can be older than groups: its FLEET_EVENTS may hold store-p<p>.
      const legacy = groups === 1 ? await deleteLegacyPartitionConsumers(opts.jsm, stream, range(opts.partitions)) : 0;
      if (legacy > 0)
        logger.info({ evt: "store_legacy_consumers_deleted", stream, legacy }, "store-p<p> consumers deleted");
      await opts.namespaces.markReset(active.ns, group);
    }
    logger.info({ evt: "store_consumer_ready", group, stream, ns: active.ns, how }, "group consumer ready");
    const consumer = await opts.js.consumers.get(stream, durable);
    // Callback mode: no async iteration per message. The inbox needs no backpressure of its own, as
    // the server stops delivering at the consumer's max_ack_pending (100,000) unacknowledged messages.
    const gen = ++generation;
    const opened = await consumer.consume({
      max_messages: Math.min(maxBatch, 10_000),
      expires: CONSUME_EXPIRES_MS,
      callback: (m) => {
        // Only messages of the consumer opened last: a closed one's stragglers would be stale.
        if (generation === gen && !stopping) {
          inbox.push(m);
          newest = m;
        }
      },
    });
    messages = opened;
    current = active;
    void (async () => {
      for await (const status of opened.status()) {
        if (status.type !== "heartbeats_missed" || status.count < MISSED_HEARTBEATS_TO_REOPEN) continue;
        if (messages !== opened) return;
        logger.warn(
          { evt: "store_consume_stalled", group, missed: status.count },
          "group consumer silent; opening it again",
        );
        messages = undefined;
        await opened.close().catch(() => undefined);
        return;
      }
    })().catch(() => undefined);
    void opened.closed().then((err) => {
      if (err) logger.warn({ evt: "store_consume_failed", group, err }, "consuming the group failed");
      // The consumer stopped delivering (deleted, closed): the loop opens it again.
      if (messages === opened && !stopping) messages = undefined;
    });
  }

  /**
   * The batch being applied while the next one is received and prepared (two batches in flight).
   * Batches are applied one after the other and acked in stream order, each only once its writes
   * are in Redis.
   */
  let applying:
    | { batch: JsMsg[]; lastSeq: number; changes: ReturnType<typeof changesOfBatch>; done: Promise<void> }
    | undefined;

  /** Waits for the batch being applied and acks it; throws (with the batch in `failed`) if it failed. */
  async function settle(failed: JsMsg[][]) {
    const a = applying;
    if (!a) return;
    applying = undefined;
    try {
      await a.done;
    } catch (err) {
      failed.push(a.batch);
      throw err;
    }
    inFlight -= a.batch.length;
    appliedSeq = a.lastSeq;
    failures = 0;
    // `ack_policy: all`: acking the batch's last message acknowledges the whole batch (and
    // nothing delivered after it).
    (a.batch.at(-1) as JsMsg).ack();
    opts.onBatch?.(group, a.batch.length, a.lastSeq);
    opts.onApplied?.(group, a.lastSeq, a.changes);
  }

  /** Batches failed in a row (the back-off before the next attempt grows with it). */
  let failures = 0;

  async function loop() {
    while (!stopping) {
      // Received and not acked: naked if a batch fails.
      const failed: JsMsg[][] = [];
      try {
        const active = await opts.namespaces.peek();
        if (!active) {
          await settle(failed);
          // Nothing may be applied (or acked) until a complete namespace is active again.
          if (current) logger.warn({ evt: "store_namespace_missing", group, ns: current.ns }, "namespace gone");
          current = undefined;
          await closeConsumer();
          opts.onNoNamespace?.();
          await new Promise((r) => setTimeout(r, Math.min(idleMs, 250)));
          continue;
        }
        if (!current || active.ns !== current.ns || !messages) {
          await settle(failed);
          await openConsumer(active);
          // This worker starts applying the group (a store started or took the group over: what was
          // announced before it is unknown), or another namespace answers queries now (a rebuild
          // switched, or the heal after Redis lost its data): anything may read differently.
          if (announcedNs !== active.ns) {
            opts.onApplied?.(group, startSeqOfGroup(active, group) - 1, { all: true });
          }
          announcedNs = active.ns;
        }
        if (applying && inbox.length === 0) {
          await settle(failed);
          continue;
        }
        const batch = await inbox.take(maxBatch, idleMs);
        if (batch.length === 0) continue;
        failed.push(batch);
        inFlight += batch.length;
        const ns = (current as ActiveNamespace).ns;
        const records = batch.map(toEventRecord);
        const prepared = await opts.projector.prepareBatch(records);
        await settle(failed);
        const done = opts.slots.run(() => opts.projector.applyPrepared(ns, prepared));
        // Awaited by settle(); handled here so a failure meanwhile is not unhandled.
        done.catch(() => undefined);
        applying = { batch, lastSeq: (records.at(-1) as EventRecord).seq, changes: changesOfBatch(prepared), done };
      } catch (err) {
        failures++;
        logger.warn({ evt: "store_batch_failed", group, err, failures }, "applying a batch failed");
        // The next ack would also acknowledge the failed batch (`ack_policy: all`), so nothing
        // delivered after it may be applied first: drop what was received and start over from a fresh
        // consumer, which prepareStoreConsumer moves back to the ack floor + 1. A batch still being
        // applied is let finish but not acked (its redelivery is a no-op).
        const left = applying;
        applying = undefined;
        await left?.done.catch(() => undefined);
        for (const b of left ? [left.batch, ...failed] : failed) for (const m of b) m.nak();
        inFlight = 0;
        current = undefined;
        await closeConsumer();
        await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** failures)));
      }
    }
    // Stopping: the batch being applied is finished and acked (or naked if it fails).
    const failed: JsMsg[][] = [];
    await settle(failed).catch((err: unknown) => {
      logger.warn({ evt: "store_batch_failed", group, err }, "applying a batch failed");
      for (const b of failed) for (const m of b) m.nak();
    });
    inFlight = 0;
  }

  const done = loop();
  return {
    group,
    get pending() {
      return (newest ? pendingOf(newest) : 0) + inbox.length + inFlight;
    },
    get appliedSeq() {
      return appliedSeq;
    },
    get ns() {
      return current?.ns;
    },
    async stop() {
      stopping = true;
      inbox.close();
      await done;
      await closeConsumer();
    },
  };
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
