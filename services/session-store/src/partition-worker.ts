import { STREAMS, storeEventConsumer } from "@fleet/protocol";
import type { Logger } from "@fleet/runtime";
import type { ConsumerMessages, JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import { prepareStoreConsumer } from "./consumer-control.js";
import { createInbox } from "./inbox.js";
import type { ActiveNamespace, NamespaceControl } from "./namespace.js";
import type { EventRecord, Projector } from "./projector.js";
import type { Slots } from "./slots.js";

export interface PartitionWorkerOptions {
  partition: number;
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
  onBatch?: (partition: number, size: number, lastSeq: number) => void;
}

export interface PartitionWorker {
  readonly partition: number;
  /** The namespace this worker feeds (undefined before the first batch loop). */
  readonly ns: string | undefined;
  /** Stops consuming, finishes the batch in progress, and naks what was received but not applied. */
  stop(): Promise<void>;
}

const PREV_SEQ_HEADER = "Nats-Expected-Last-Subject-Sequence";

export function toEventRecord(m: JsMsg): EventRecord {
  const prev = m.headers?.get(PREV_SEQ_HEADER);
  return {
    seq: m.seq,
    subject: m.subject,
    data: m.data,
    prevSeq: prev && /^[0-9]+$/.test(prev) ? Number(prev) : undefined,
  };
}

/**
 * Feeds one held partition: pulls `store-p<p>`, applies batches to the active namespace, acks after
 * the writes. Before every batch it re-reads the active namespace; when that changed (a rebuild
 * switched, or Redis lost the control record) it moves its consumer to the namespace's `startSeq`
 * once per namespace and partition, so nothing acked into the old namespace is missing in the new one.
 */
export function startPartitionWorker(opts: PartitionWorkerOptions): PartitionWorker {
  const { partition, logger } = opts;
  const maxBatch = opts.maxBatch ?? 5000;
  const idleMs = opts.idleMs ?? 500;
  const inbox = createInbox<JsMsg>();
  let messages: ConsumerMessages | undefined;
  let current: ActiveNamespace | undefined;
  let stopping = false;

  async function closeConsumer() {
    const m = messages;
    messages = undefined;
    if (m) await m.close().catch(() => undefined);
    for (const msg of inbox.drain()) msg.nak();
  }

  async function openConsumer(active: ActiveNamespace) {
    await closeConsumer();
    const reset = !(await opts.namespaces.isReset(active.ns, partition));
    const how = await prepareStoreConsumer(opts.jsm, partition, { startSeq: active.startSeq, reset });
    if (reset) await opts.namespaces.markReset(active.ns, partition);
    logger.info({ evt: "store_consumer_ready", partition, ns: active.ns, how }, "partition consumer ready");
    const consumer = await opts.js.consumers.get(STREAMS.events.name, storeEventConsumer(partition).durable_name);
    const opened = await consumer.consume({ max_messages: Math.min(maxBatch, 2000) });
    messages = opened;
    current = active;
    void pump(opened);
  }

  /** Moves pulled messages to the inbox; stops pulling while the inbox holds two batches. */
  async function pump(source: ConsumerMessages) {
    try {
      for await (const m of source) {
        inbox.push(m);
        if (inbox.length >= 2 * maxBatch) await inbox.below(maxBatch);
        if (stopping || messages !== source) break;
      }
    } catch (err) {
      logger.warn({ evt: "store_consume_failed", partition, err }, "consuming the partition failed");
    } finally {
      // The consumer stopped delivering (deleted, closed): the loop opens it again.
      if (messages === source && !stopping) messages = undefined;
    }
  }

  async function loop() {
    let failures = 0;
    while (!stopping) {
      let batch: JsMsg[] = [];
      try {
        const active = await opts.namespaces.active();
        if (!current || active.ns !== current.ns || !messages) await openConsumer(active);
        batch = await inbox.take(maxBatch, idleMs);
        if (batch.length === 0) continue;
        const ns = (current as ActiveNamespace).ns;
        const records = batch.map(toEventRecord);
        await opts.slots.run(() => opts.projector.applyBatch(ns, records));
        for (const m of batch) m.ack();
        opts.onBatch?.(partition, batch.length, (batch.at(-1) as JsMsg).seq);
        failures = 0;
      } catch (err) {
        for (const m of batch) m.nak();
        failures++;
        logger.warn({ evt: "store_batch_failed", partition, err, failures }, "applying a batch failed");
        if (failures >= 3) {
          // Start over from a fresh consumer (it may have been deleted or reset elsewhere).
          current = undefined;
          await closeConsumer();
        }
        await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** failures)));
      }
    }
  }

  const done = loop();
  return {
    partition,
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
