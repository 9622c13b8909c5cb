import type { JetStreamManager } from "@nats-io/jetstream";
import { Base64UrlPaddedCodec, type ObjectStore } from "@nats-io/obj";

/**
 * Removes an object of a bucket and leaves nothing of it: its chunks, then its meta record (nats.js'
 * `delete` would keep a `deleted` meta record per name forever). Idempotent; a missing object is
 * a no-op, and a crash between the two purges is finished by the next call.
 */
export async function removeObject(
  store: ObjectStore,
  jsm: JetStreamManager,
  bucket: string,
  name: string,
): Promise<void> {
  const stream = `OBJ_${bucket}`;
  const info = await store.info(name);
  if (info?.nuid) await jsm.streams.purge(stream, { filter: `$O.${bucket}.C.${info.nuid}` });
  await jsm.streams.purge(stream, { filter: `$O.${bucket}.M.${Base64UrlPaddedCodec.encode(name)}` });
}
