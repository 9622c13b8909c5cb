import { loopCommandConsumer, parseCommandSubject, partitionOf, STREAMS } from "@fleet/protocol";
import { ensureConsumer } from "@fleet/runtime";
import type { ConsumerMessages, JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import { type CommandMsg, readStoredCommands, sweptCommandMsg } from "./command-sweep.js";
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
  /** The consumer's message, or, for a command read by a sweep, a handle that deletes it on ack. */
  msg: CommandMsg;
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
 * command that already has an outcome as a duplicate. When commands were skipped (stored, neither
 * pending nor undelivered) the intake also sweeps: it reads them from the stream's leader and hands
 * over those none of its pulls holds (see `decideStall`, `command-sweep.ts`).
 */
const STALL_CHECK_MS = 5_000;

/** A delivery's fields but its session: the command is referred to by its msgID, else its sequence. */
function deliveryOf(
  data: Uint8Array,
  msgId: string | undefined,
  streamSeq: number,
  time: number,
  msg: CommandMsg,
): Omit<CommandDelivery, "partition" | "sessionId"> {
  return { data, commandRef: msgId || `seq:${streamSeq}`, hasMsgId: !!msgId, streamSeq, time, msg };
}

export interface PartitionIntake {
  readonly partition: number;
  stop(): Promise<void>;
}

/**
 * Consumes one partition's durable consumer `loop-p<p>`. Commands of one session are handed to
 * `handle` in stream order, one at a time; sessions never wait on each other. Commands whose subject
 * names no valid session are acked and dropped (`onUndeliverable`); a valid command of another
 * partition is left alone (`onForeign`).
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
  /** A valid command of another partition was delivered here; it is left for its own partition. */
  onForeign?: (subject: string, streamSeq: number, consumer: string) => void;
  onError: (err: unknown, delivery: CommandDelivery) => void;
  /** The consumer stopped delivering and is opened again (see CONSUME_EXPIRES_MS). */
  onReopen?: (why: string) => void;
  /** Commands stayed pending that no pull of this worker holds, or undelivered; the consumer is made again. */
  onStalled?: (counts: { pending: number; undelivered: number; stored: number; held: number }) => void;
  /** Commands were read from the stream by a sweep and handed over (their stream sequences). */
  onSwept?: (seqs: number[]) => void;
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

  // Commands a sweep handed over and the handler has not acknowledged yet, by stream sequence.
  const swept = new Set<number>();
  /**
   * Hands a command to its session's chain. `undeliverable`: its subject names no valid session
   * (acked and dropped); `foreign`: a valid command of another partition, which a 3-node nats-server
   * 2.9 cluster was seen to deliver to this partition's consumer. It is left stored, unacknowledged,
   * for its own partition's consumer or sweep: acknowledging it here would remove it unhandled.
   */
  const dispatch = (
    subject: string,
    delivery: Omit<CommandDelivery, "partition" | "sessionId">,
    done: () => void,
  ): "handed" | "undeliverable" | "foreign" => {
    const parsed = parseCommandSubject(subject);
    if (!parsed || partitionOf(parsed.sessionId, opts.partitions) !== parsed.partition) return "undeliverable";
    if (parsed.partition !== opts.partition) return "foreign";
    const whole: CommandDelivery = { partition: opts.partition, sessionId: parsed.sessionId, ...delivery };
    const previous = chains.get(parsed.sessionId) ?? Promise.resolve();
    const next = previous
      .then(() => opts.handle(whole))
      .catch((err) => opts.onError(err, whole))
      .finally(() => {
        done();
        if (chains.get(parsed.sessionId) === next) chains.delete(parsed.sessionId);
      });
    chains.set(parsed.sessionId, next);
    return "handed";
  };

  const serve = async (m: ConsumerMessages) => {
    for await (const msg of m) {
      held.add(msg);
      const time = Math.floor(msg.info.timestampNanos / 1_000_000);
      const delivery = deliveryOf(msg.data, msg.headers?.get("Nats-Msg-Id"), msg.seq, time, msg);
      const routed = dispatch(msg.subject, delivery, () => held.delete(msg));
      if (routed === "handed") continue;
      held.delete(msg);
      if (routed === "foreign") {
        opts.onForeign?.(msg.subject, msg.seq, msg.info.consumer);
        continue;
      }
      opts.onUndeliverable(msg.subject);
      msg.ack();
    }
  };

  const sweep = async () => {
    const heldSeqs = new Set([...held].map((m) => m.seq));
    const handed: number[] = [];
    for (const stored of await readStoredCommands(opts.jsm, config.filter_subject)) {
      if (stopped) break;
      if (heldSeqs.has(stored.seq) || swept.has(stored.seq)) continue;
      swept.add(stored.seq);
      const settled = () => swept.delete(stored.seq);
      const msg = sweptCommandMsg(opts.jsm, stored.seq, settled);
      const delivery = deliveryOf(
        stored.data,
        stored.header?.get("Nats-Msg-Id"),
        stored.seq,
        stored.time.getTime(),
        msg,
      );
      const routed = dispatch(stored.subject, delivery, () => undefined);
      if (routed === "handed") {
        handed.push(stored.seq);
      } else if (routed === "foreign") {
        settled();
      } else {
        opts.onUndeliverable(stored.subject);
        msg.ack();
      }
    }
    if (handed.length > 0) opts.onSwept?.(handed);
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
    // The sweep goes on when the delete fails (a consumer without a leader), and the other way round.
    await Promise.allSettled([
      opts.jsm.consumers.delete(STREAMS.commands.name, config.durable_name),
      verdict.sweep ? sweep() : undefined,
    ]);
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
