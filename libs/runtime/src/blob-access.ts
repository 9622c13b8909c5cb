// Objects of Fleet's object stores (`fleet_blobs`, `fleet_inputs`): read, write once, copy, and the
// resolution of content blocks by reference (input-blobs.ts in @fleet/protocol).
import {
  type BlobBlock,
  type BlobRef,
  forEachContentBlock,
  isBlobBlock,
  mapContentBlocks,
  OBJECT_STORES,
  resolvedBlock,
} from "@fleet/protocol";
import { type ObjectStore, Objm } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";

export interface StoredObject {
  size: number;
  /** The object store's digest, `SHA-256=<base64url>`. */
  digest: string;
}

export interface BlobAccess {
  /** The object's bytes; undefined when there is no such object. Rejects when it is over `maxBytes`. */
  read(ref: Pick<BlobRef, "bucket" | "name">, maxBytes?: number): Promise<Uint8Array | undefined>;
  /** Size and digest of an object; undefined when there is no such object. */
  info(ref: Pick<BlobRef, "bucket" | "name">): Promise<StoredObject | undefined>;
  /**
   * Writes an object, unless one of that name and size is there already (a re-sent command writes
   * its parts once). Names are per command: an object is never replaced by different content.
   */
  write(bucket: string, name: string, bytes: Uint8Array, mimeType?: string): Promise<StoredObject>;
  /** Copies an object to another bucket under the same name (unless it is there); false when it is missing. */
  copy(ref: Pick<BlobRef, "bucket" | "name">, toBucket: string): Promise<boolean>;
}

const KNOWN: ReadonlySet<string> = new Set(Object.values(OBJECT_STORES).map((o) => o.name));

/**
 * Access to the object stores over `nc`; each store is opened on first use. Only Fleet's stores.
 * `cacheBytes`: objects of `fleet_blobs` read are kept (they never change), the least recently read
 * dropped first, up to this many bytes (default 0: none).
 */
export function createBlobAccess(nc: NatsConnection, opts: { cacheBytes?: number } = {}): BlobAccess {
  const stores = new Map<string, Promise<ObjectStore>>();
  const cache = new Map<string, Uint8Array>();
  let cached = 0;
  const remember = (key: string, bytes: Uint8Array) => {
    const limit = opts.cacheBytes ?? 0;
    if (bytes.byteLength > limit / 4) return;
    cache.set(key, bytes);
    cached += bytes.byteLength;
    for (const [k, v] of cache) {
      if (cached <= limit) break;
      cache.delete(k);
      cached -= v.byteLength;
    }
  };
  const open = (bucket: string): Promise<ObjectStore> => {
    if (!KNOWN.has(bucket)) return Promise.reject(new Error(`${bucket} is not one of Fleet's object stores`));
    let store = stores.get(bucket);
    if (!store) {
      store = new Objm(nc).open(bucket);
      stores.set(bucket, store);
      store.catch(() => stores.delete(bucket));
    }
    return store;
  };
  const info = async (ref: Pick<BlobRef, "bucket" | "name">) => {
    const found = await (await open(ref.bucket)).info(ref.name);
    return found && !found.deleted ? { size: found.size, digest: found.digest } : undefined;
  };
  const read = async (ref: Pick<BlobRef, "bucket" | "name">, maxBytes = Number.POSITIVE_INFINITY) => {
    const key = `${ref.bucket}/${ref.name}`;
    const hit = cache.get(key);
    if (hit) {
      cache.delete(key);
      cache.set(key, hit);
      return hit;
    }
    const store = await open(ref.bucket);
    const found = await store.info(ref.name);
    if (!found || found.deleted) return undefined;
    if (found.size > maxBytes) throw new Error(`${key} is ${found.size} bytes; the limit is ${maxBytes}`);
    const bytes = (await store.getBlob(ref.name)) ?? undefined;
    if (bytes && ref.bucket === OBJECT_STORES.blobs.name) remember(key, bytes);
    return bytes;
  };
  const write = async (bucket: string, name: string, bytes: Uint8Array, mimeType?: string) => {
    const store = await open(bucket);
    const existing = await store.info(name);
    if (existing && !existing.deleted && existing.size === bytes.byteLength) {
      return { size: existing.size, digest: existing.digest };
    }
    const written = await store.putBlob({ name, ...(mimeType ? { description: mimeType } : {}) }, bytes);
    return { size: written.size, digest: written.digest };
  };
  return {
    read,
    info,
    write,
    async copy(ref, toBucket) {
      const there = await info({ bucket: toBucket, name: ref.name });
      if (there) return true;
      const bytes = await read(ref);
      if (!bytes) return false;
      await write(toBucket, ref.name, bytes);
      return true;
    },
  };
}

/**
 * `value` with every block by reference resolved (its object's text or image bytes inline, no
 * `blob`); each object is read once. Rejects when an object is missing or cannot be read.
 */
export async function resolveBlobBlocks<T>(value: T, blobs: BlobAccess, maxBytes?: number): Promise<T> {
  const refs = new Map<string, Pick<BlobRef, "bucket" | "name">>();
  forEachContentBlock(value, (block) => {
    if (isBlobBlock(block)) refs.set(`${block.blob.bucket}/${block.blob.name}`, block.blob);
  });
  if (refs.size === 0) return value;
  const contents = new Map<string, Uint8Array>();
  await Promise.all(
    [...refs].map(async ([key, ref]) => {
      const bytes = await blobs.read(ref, maxBytes);
      if (!bytes) throw new Error(`${key} does not exist`);
      contents.set(key, bytes);
    }),
  );
  return mapContentBlocks(value, (block) =>
    isBlobBlock(block)
      ? resolvedBlock(block as BlobBlock, contents.get(`${block.blob.bucket}/${block.blob.name}`) as Uint8Array)
      : block,
  );
}
