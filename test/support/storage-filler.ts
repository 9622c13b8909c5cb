// Fills a JetStream server's storage, the way an operator's disk fills: a filler stream is published to
// until the server refuses for lack of room (also small writes), and deleting it gives the space back.
import { isStorageFullError } from "@fleet/runtime";
import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

export interface StorageFill {
  /** Bytes the filler stored before the server refused a 64-byte message. */
  readonly bytes: number;
  /** Deletes the filler stream: the space is the server's again. Idempotent; retried for up to 30 s. */
  release(): Promise<void>;
}

export interface FillOptions {
  /** Filler stream name (default `STORAGE_FILLER`); its subject is `fleet-test.filler.<name>`. */
  stream?: string;
  /** Replicas of the filler stream: on a cluster, as many as the nodes whose storage must fill. */
  replicas?: number;
  /**
   * Bytes after which filling stops with an error instead of filling a disk: the server must have a
   * `max_file_store` (or the account a `max_file`) below it. Default 1 GiB.
   */
  maxBytes?: number;
}

const CHUNKS = [512 * 1024, 16 * 1024, 64];
/** Publishes in flight at once: a loaded 2-core machine fills 200 MB in about a second this way. */
const IN_FLIGHT = 8;
const ATTEMPTS = 20;

/**
 * Fills the server's file storage. Resolves once a 64-byte publish is refused for lack of room
 * (JetStream 10023 on a server past `max_file_store`, 10002 on an account past its limit): from
 * then on every write to a file stream is refused until `release()`. Other publish errors (a
 * restart, an election) are retried; a server that never refuses within `maxBytes` is an error.
 */
export async function fillStorage(nc: NatsConnection, opts: FillOptions = {}): Promise<StorageFill> {
  const name = opts.stream ?? "STORAGE_FILLER";
  const subject = `fleet-test.filler.${name}`;
  const maxBytes = opts.maxBytes ?? 1024 ** 3;
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  await retry(() =>
    jsm.streams.add({ name, subjects: [subject], storage: StorageType.File, num_replicas: opts.replicas ?? 1 }),
  );
  let bytes = 0;
  const fill = async () => {
    for (const size of CHUNKS) {
      const chunk = new Uint8Array(size);
      const batch = size > 1024 ? IN_FLIGHT : 1;
      for (let failures = 0, full = false; !full; ) {
        if (bytes > maxBytes) throw new Error(`${bytes} bytes stored and no refusal: is max_file_store set?`);
        const results = await Promise.allSettled(
          Array.from({ length: batch }, () => js.publish(subject, chunk, { timeout: 5_000 })),
        );
        bytes += size * results.filter((r) => r.status === "fulfilled").length;
        const errors = results.flatMap((r) => (r.status === "rejected" ? [r.reason] : []));
        full = errors.some(isStorageFullError);
        if (full || errors.length === 0) continue;
        if (++failures >= ATTEMPTS) throw errors[0];
        await sleep(250);
      }
    }
  };
  const release = async () => {
    await retry(async () => {
      try {
        await jsm.streams.delete(name);
      } catch (err) {
        if (!/stream not found/i.test((err as Error).message)) throw err;
      }
    });
  };
  try {
    await fill();
  } catch (err) {
    await release().catch(() => undefined);
    throw err;
  }
  return { bytes, release };
}

async function retry<T>(fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(250);
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
