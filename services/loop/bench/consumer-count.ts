// Counting JetStream consumers the server creates, from its `$JS.EVENT.ADVISORY.CONSUMER.CREATED.>`
// advisories (one per create, ephemeral or durable), for bench:loop's consumer lines (decision 0058).
import type { NatsConnection } from "@nats-io/transport-node";

export interface ConsumerCounter {
  /** Consumers created since the counter started. */
  readonly created: number;
  /** The same, per stream (the advisory's `stream`). */
  byStream(): Map<string, number>;
  /** Waits until advisories published before this call have arrived. */
  settle(): Promise<void>;
  stop(): void;
}

/** Counts consumer-created advisories on `nc`'s account from now on. */
export async function countConsumersCreated(nc: NatsConnection): Promise<ConsumerCounter> {
  let created = 0;
  const streams = new Map<string, number>();
  const sub = nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.CREATED.>", {
    callback: (_err, msg) => {
      created++;
      const stream = String((msg.json() as { stream?: unknown }).stream ?? "?");
      streams.set(stream, (streams.get(stream) ?? 0) + 1);
    },
  });
  await nc.flush();
  return {
    get created() {
      return created;
    },
    byStream: () => new Map(streams),
    async settle() {
      // The server publishes an advisory right after the create it reports; a short wait and a
      // round trip let the last ones arrive.
      await new Promise((r) => setTimeout(r, 250));
      await nc.flush();
    },
    stop: () => sub.unsubscribe(),
  };
}
