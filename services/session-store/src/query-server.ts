import { randomUUID } from "node:crypto";
import {
  OBJECT_STORES,
  STORE_OPS,
  STORE_QUEUE_GROUP,
  type StoreOp,
  type StoreReplyRef,
  storeReplyName,
  subjects,
} from "@fleet/protocol";
import type { BlobAccess, Logger } from "@fleet/runtime";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { handleQuery, type QueryContext, type QueryReply } from "./queries.js";

const encoder = new TextEncoder();

/** Encoded replies by reply object: a reply the handler hands out again (memoized) is not re-encoded. */
const encodedReplies = new WeakMap<QueryReply, Uint8Array>();

export interface QueryServer {
  close(): Promise<void>;
}

/**
 * Serves `fleet.store.<op>` in queue group `fleet-store`. Requests are handled concurrently; every
 * request gets exactly one reply, also when the handler fails or the reply is too large. A reply
 * over the server's `max_payload` is written to `fleet_inputs` (`reply/<uuid>`) and answered by
 * reference (`{ok: true, replyRef}`) when `blobs` is given, else answered `invalid`.
 */
export function startQueryServer(
  nc: NatsConnection,
  ctx: QueryContext,
  logger: Logger,
  observe?: (op: StoreOp, seconds: number, ok: boolean) => void,
  blobs?: BlobAccess,
): QueryServer {
  const subs: Subscription[] = [];
  const inflight = new Set<Promise<void>>();
  for (const op of STORE_OPS) {
    subs.push(
      nc.subscribe(subjects.store(op), {
        queue: STORE_QUEUE_GROUP,
        callback: (err, msg) => {
          if (err) {
            logger.warn({ evt: "store_query_sub_error", op, err }, "query subscription error");
            return;
          }
          const p = answer(op, msg).finally(() => inflight.delete(p));
          inflight.add(p);
        },
      }),
    );
  }

  async function answer(op: StoreOp, msg: Msg) {
    const started = performance.now();
    let reply: QueryReply;
    try {
      reply = await handleQuery(ctx, op, msg.data);
    } catch (err) {
      logger.warn({ evt: "store_query_failed", op, err }, "query failed");
      reply = { ok: false, code: "unavailable", error: `store unavailable: ${(err as Error).message}` };
    }
    let bytes = encodedReplies.get(reply) ?? encoder.encode(JSON.stringify(reply));
    encodedReplies.set(reply, bytes);
    const max = nc.info?.max_payload ?? 1024 * 1024;
    if (bytes.byteLength > max && blobs) {
      try {
        const name = storeReplyName(randomUUID());
        const bucket = OBJECT_STORES.inputs.name;
        const stored = await blobs.write(bucket, name, bytes, "application/json");
        const byRef: StoreReplyRef = { ok: true, replyRef: { bucket, name, size: stored.size, digest: stored.digest } };
        bytes = encoder.encode(JSON.stringify(byRef));
      } catch (err) {
        logger.warn({ evt: "store_reply_by_reference_failed", op, err }, "could not write a large reply");
      }
    }
    if (bytes.byteLength > max) {
      bytes = encoder.encode(
        JSON.stringify({
          ok: false,
          code: "invalid",
          error: `the reply (${bytes.byteLength} bytes) exceeds the server's max_payload of ${max} bytes`,
        }),
      );
      reply = { ok: false, code: "invalid", error: "" };
    }
    if (msg.reply) msg.respond(bytes);
    observe?.(op, (performance.now() - started) / 1000, reply.ok);
  }

  return {
    async close() {
      for (const sub of subs) sub.unsubscribe();
      await Promise.allSettled([...inflight]);
    },
  };
}
