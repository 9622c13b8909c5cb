// Counting JetStream consumers the server creates, from its `$JS.EVENT.ADVISORY.CONSUMER.CREATED.>`
// advisories (one per create, ephemeral or durable), for bench:loop's consumer lines (decision 0058).
import type { NatsConnection } from "@nats-io/transport-node";

export interface ConsumerCounter {
  /** Consumers created since the counter started. */
  readonly created: number;
  /** Waits until advisories published before this call have arrived. */
  settle(): Promise<void>;
  stop(): void;
}

/** Counts consumer-created advisories on `nc`'s account from now on. */
export async function countConsumersCreated(nc: NatsConnection): Promise<ConsumerCounter> {
  let created = 0;
  const sub = nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.CREATED.>", {
    callback: () => {
      created++;
    },
  });
  await nc.flush();
  return {
    get created() {
      return created;
    },
    async settle() {
      // The server publishes an advisory right after the create it reports; a short wait and a
      // round trip let the last ones arrive.
      await new Promise((r) => setTimeout(r, 250));
      await nc.flush();
    },
    stop: () => sub.unsubscribe(),
  };
}
