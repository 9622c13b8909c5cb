// Which event streams republish each stored event whole on the live path (change 67).
import { eventStreamNames, STREAMS } from "@fleet/protocol";
import type { JetStreamManager } from "@nats-io/jetstream";

/**
 * The names of the K event streams whose config republishes every stored message, body included,
 * from `fleet.evt.>` to `fleet.live.>` (`STREAMS.events.republish`). A stream made before change 67
 * has no republish (nats-server 2.9 sets it only at creation), and a stream that cannot be read
 * here is left out too: its tails use the doorbell path (change 58). Never rejects.
 */
export async function republishingStreams(jsm: JetStreamManager, groups: number): Promise<Set<string>> {
  const wanted = STREAMS.events.republish;
  const found = await Promise.all(
    eventStreamNames(groups).map(async (name) => {
      try {
        const rp = (await jsm.streams.info(name)).config.republish;
        return rp && rp.src === wanted.src && rp.dest === wanted.dest && rp.headers_only !== true ? name : null;
      } catch {
        return null;
      }
    }),
  );
  return new Set(found.filter((n): n is string => n !== null));
}
