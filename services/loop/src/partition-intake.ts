import { loopCommandConsumer, parseCommandSubject, partitionOf, STREAMS } from "@fleet/protocol";
import { ensureConsumer } from "@fleet/runtime";
import type { ConsumerMessages, JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import { decideStall } from "./stall-decision.js";

export interface CommandDelivery {
  partition: number;
  sessionId: string;
  data: Uint8Array;
  /** `Nats-Msg-Id` header, or `seq:<stream sequence>` when there is none. */
  commandRef: string;
  hasMsgId: boolean;
  streamSeq: number;
  /** Publish time of the command (ms). */
  time: number;
  msg: JsMsg;
}

/**
 * A pull of the command consumer lasts at most this long; the server heartbeats it every half of it,
 * and two missed heartbeats in a row (a consumer without a leader, a lost node) reopen the consume.
 */
const CONSUME_EXPIRES_MS = 10_000;

/**
 * How long this worker's pulls last: at most half the ack wait (the lease TTL), at least 1 s.
 * nats-server 2.9 keeps a dead worker's pull waiting until it expires and delivers commands to it;
 * such a command comes back after one ack wait, and then must find no dead pull still waiting
 * ahead of the heir's (seen: a takeover 2 s later, a prompt redelivered twice, with 10 s pulls).
 */
export const pullExpiresMs = (ackWaitMs: number) =>
  Math.min(CONSUME_EXPIRES_MS, Math.max(1_000, Math.floor(ackWaitMs / 2)));
const MISSED_HEARTBEATS_TO_REOPEN = 2;
/**
 * How often the intake compares the consumer's pending acknowledgements with the commands it holds.
 * While this worker holds the partition nobody else should hold its commands: more pending than held
 * for longer than `stuckAfterMs` (default 2 ack waits; a command delivered to a pull that was already
 * gone is redelivered within one) means a command will never come back (seen on a 3-node nats-server
 * 2.9 cluster after leader elections). The intake then deletes the consumer and makes it again; in
 * the work-queue stream the new one delivers every command not acked yet, and the actor answers a
 * command that already has an outcome as a duplicate.
 */
const STALL_CHECK_MS = 5_000;

export interface PartitionIntake {
  readonly partition: number;
  stop(): Promise<void>;
}

/**
 * Consumes one partition's durable consumer `loop-p<p>`. Commands of one session are handed to
 * `handle` in stream order, one at a time; sessions never wait on each other. Commands whose subject
 * names no valid session of this partition are acked and dropped (`onUndeliverable`).
 * The handler acks each message itself, after the command's outcome is durable.
 */
export async function startPartitionIntake(opts: {
  js: JetStreamClient;
  jsm: JetStreamManager;
  partition: number;
  partitions: number;
  /** The consumer's `ack_wait` (the lease TTL); commands held are marked in progress every third of it. */
  ackWaitMs: number;
  handle: (delivery: CommandDelivery) => Promise<void>;
  onUndeliverable: (subject: string) => void;
  onError: (err: unknown, delivery: CommandDelivery) => void;
  /** The consumer stopped delivering and is opened again (see CONSUME_EXPIRES_MS). */
  onReopen?: (why: string) => void;
  /** Commands stayed pending that no pull of this worker holds, or undelivered; the consumer is made again. */
  onStalled?: (counts: { pending: number; undelivered: number; stored: number; held: number }) => void;
  stallCheckMs?: number;
  stuckAfterMs?: number;
  now?: () => number;
}): Promise<PartitionIntake> {
  const config = loopCommandConsumer(opts.partition, opts.ackWaitMs);
  const open = async () => {
    // Made again when it was deleted meanwhile (it starts at the stream's first command; commands
    // that already have an outcome are recognised as duplicates by the actor).
    const drift = await ensureConsumer(opts.jsm, STREAMS.commands.name, config);
    if (drift.length > 0) {
      // A consumer made with another ack_wait (an older version, another TTL): take this worker's.
      await opts.jsm.consumers.update(STREAMS.commands.name, config.durable_name, { ack_wait: config.ack_wait });
    }
    const consumer = await opts.js.consumers.get(STREAMS.commands.name, config.durable_name);
    return consumer.consume({ max_messages: 256, expires: pullExpiresMs(opts.ackWaitMs) });
  };
  let messages: ConsumerMessages = await open();
  let stopped = false;
  const chains = new Map<string, Promise<void>>();
  // Every command pulled and not yet handled, waiting in its session's chain or being handled.
  const held = new Set<JsMsg>();
  const heartbeat = setInterval(
    () => {
      for (const msg of held) msg.working();
    },
    Math.max(100, Math.floor(opts.ackWaitMs / 3)),
  );
  heartbeat.unref();

  // Ends the current consume when the server stops answering its pulls, so `loop` opens it again.
  const watch = (m: ConsumerMessages) =>
    void (async () => {
      let missed = 0;
      for await (const status of m.status()) {
        if (status.type === "heartbeats_missed") missed++;
        else if (status.type === "next" || status.type === "heartbeat") missed = 0;
        if (missed >= MISSED_HEARTBEATS_TO_REOPEN || status.type === "consumer_deleted") {
          opts.onReopen?.(status.type);
          m.stop();
          return;
        }
      }
    })().catch(() => undefined);
  watch(messages);

  const serve = async (m: ConsumerMessages) => {
    for await (const msg of m) {
      const parsed = parseCommandSubject(msg.subject);
      if (
        !parsed ||
        parsed.partition !== opts.partition ||
        partitionOf(parsed.sessionId, opts.partitions) !== opts.partition
      ) {
        opts.onUndeliverable(msg.subject);
        msg.ack();
        continue;
      }
      const msgId = msg.headers?.get("Nats-Msg-Id") ?? "";
      const delivery: CommandDelivery = {
        partition: opts.partition,
        sessionId: parsed.sessionId,
        data: msg.data,
        commandRef: msgId || `seq:${msg.seq}`,
        hasMsgId: msgId !== "",
        streamSeq: msg.seq,
        time: Math.floor(msg.info.timestampNanos / 1_000_000),
        msg,
      };
      held.add(msg);
      const previous = chains.get(parsed.sessionId) ?? Promise.resolve();
      const next = previous
        .then(() => opts.handle(delivery))
        .catch((err) => opts.onError(err, delivery))
        .finally(() => {
          held.delete(msg);
          if (chains.get(parsed.sessionId) === next) chains.delete(parsed.sessionId);
        });
      chains.set(parsed.sessionId, next);
    }
  };
  const now = opts.now ?? Date.now;
  const stuckAfterMs = opts.stuckAfterMs ?? 2 * opts.ackWaitMs;
  let stalledSince: number | undefined;
  let deliveredBefore: number | undefined;
  const checkStalled = async () => {
    const info = await opts.jsm.consumers.info(STREAMS.commands.name, config.durable_name);
    // The work-queue stream holds only commands not acknowledged yet: a short scan on nats-server 2.9.
    const stream = await opts.jsm.streams.info(STREAMS.commands.name, { subjects_filter: config.filter_subject });
    const stored = Object.values(stream.state.subjects ?? {}).reduce((sum, n) => sum + n, 0);
    const verdict = decideStall({
      pending: info.num_ack_pending,
      undelivered: info.num_pending,
      stored,
      delivered: info.delivered.consumer_seq,
      deliveredBefore,
      maxAckPending: config.max_ack_pending,
      held: held.size,
      stalledSince,
      now: now(),
      stuckAfterMs,
    });
    stalledSince = verdict.stalledSince;
    deliveredBefore = verdict.remake ? undefined : info.delivered.consumer_seq;
    if (!verdict.remake) return;
    opts.onStalled?.({ pending: info.num_ack_pending, undelivered: info.num_pending, stored, held: held.size });
    await opts.jsm.consumers.delete(STREAMS.commands.name, config.durable_name);
  };
  const stallTimer = setInterval(() => {
    if (!stopped) void checkStalled().catch(() => undefined);
  }, opts.stallCheckMs ?? STALL_CHECK_MS);
  stallTimer.unref();

  const loop = (async () => {
    while (!stopped) {
      await serve(messages).catch((err) => opts.onReopen?.(String(err)));
      while (!stopped) {
        await new Promise((r) => setTimeout(r, 500));
        if (stopped) break;
        try {
          const opened = await open();
          // Stopped while it opened: `stop` closed the consume before it, so this one is stopped here
          // (left open, it would keep pulling the partition's commands for nobody). `stop`, not
          // `close`: a consume never iterated would keep `close` waiting.
          if (stopped) {
            opened.stop();
            break;
          }
          messages = opened;
          watch(messages);
          break;
        } catch (err) {
          opts.onReopen?.(String(err));
        }
      }
    }
  })();

  return {
    partition: opts.partition,
    async stop() {
      stopped = true;
      clearInterval(heartbeat);
      clearInterval(stallTimer);
      await messages.close().catch(() => undefined);
      await loop.catch(() => undefined);
      await Promise.allSettled([...chains.values()]);
    },
  };
}
