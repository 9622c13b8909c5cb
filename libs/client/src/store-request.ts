// Session-store queries over NATS request/reply (`fleet.store.<op>`), validated on both sides.
import {
  formatIssues,
  OBJECT_STORES,
  parseJson,
  STORE_OPS,
  type StoreErrorCode,
  type StoreOp,
  StoreReply,
  type StoreReplyOf,
  StoreReplyRef,
  StoreRequest,
  type StoreRequestOf,
  subjects,
} from "@fleet/protocol";
import type { BlobAccess } from "@fleet/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import { FleetError, StoreQueryError } from "./errors.js";

/** The `{ok: true}` branch of an op's reply, without `ok`. */
export type StoreResult<Op extends StoreOp> = Omit<Extract<StoreReplyOf<Op>, { ok: true }>, "ok">;

/**
 * Sends one query and returns the validated `{ok: true}` reply.
 * Errors: `StoreQueryError` for `{ok: false}`; `FleetError` kind `unavailable` when no store
 * instance answers, `timeout` after `timeoutMs`, `invalid_input` for a bad request, `protocol` for
 * a reply that does not match the schema.
 */
export async function storeRequest<Op extends StoreOp>(
  nc: NatsConnection,
  op: Op,
  request: StoreRequestOf<Op>,
  timeoutMs: number,
  /** Reads a reply by reference (one over `max_payload`, PROTOCOL "Large inputs"); without it such a reply is an error. */
  blobs?: BlobAccess,
): Promise<StoreResult<Op>> {
  if (!STORE_OPS.includes(op)) throw new FleetError("invalid_input", "invalid", `unknown store op ${op}`);
  const checked = StoreRequest[op].safeParse(request);
  if (!checked.success) {
    const detail = formatIssues(checked.error.issues)
      .map((i) => (i.path ? `${i.path}: ${i.message}` : i.message))
      .join("; ");
    throw new FleetError("invalid_input", "invalid", `${op}: ${detail}`);
  }
  const subject = subjects.store(op);
  let data: Uint8Array;
  try {
    const msg = await nc.request(subject, JSON.stringify(checked.data), { timeout: timeoutMs });
    data = msg.data;
  } catch (err) {
    throw requestError(op, subject, timeoutMs, err);
  }
  let json = parseJson(data);
  const byRef = json.ok ? StoreReplyRef.safeParse(json.value) : undefined;
  if (byRef?.success) {
    const ref = byRef.data.replyRef;
    if (!blobs || ref.bucket !== OBJECT_STORES.inputs.name) {
      throw new FleetError(
        "protocol",
        "invalid_reply",
        `${op}: the session store answered by reference to ${ref.bucket}/${ref.name}`,
      );
    }
    let bytes: Uint8Array | undefined;
    try {
      bytes = await blobs.read(ref);
    } catch (err) {
      throw new FleetError(
        "unavailable",
        "blobs",
        `${op}: cannot read the reply ${ref.bucket}/${ref.name} (${(err as Error).message})`,
        { cause: err },
      );
    }
    if (!bytes) throw new FleetError("unavailable", "blobs", `${op}: the reply ${ref.bucket}/${ref.name} is gone`);
    json = parseJson(bytes, bytes.byteLength);
  }
  const reply = json.ok ? StoreReply[op].safeParse(json.value) : undefined;
  if (!reply?.success) {
    throw new FleetError(
      "protocol",
      "invalid_reply",
      `${op}: the session store sent a reply that does not match the protocol`,
    );
  }
  const value = reply.data as { ok: boolean; code?: StoreErrorCode; error?: string };
  if (!value.ok) {
    // Retryable as is: the store is rebuilding (or lost Redis) and answers again shortly.
    if (value.code === "unavailable") throw new FleetError("unavailable", "store_unavailable", `${op}: ${value.error}`);
    throw new StoreQueryError(op, value.code ?? "invalid", value.error ?? "failed");
  }
  const { ok: _ok, ...rest } = value;
  return rest as StoreResult<Op>;
}

function requestError(op: string, subject: string, timeoutMs: number, err: unknown): FleetError {
  const e = err as { name?: string; message?: string; isNoResponders?: () => boolean; cause?: { name?: string } };
  if (e.isNoResponders?.() || e.cause?.name === "NoResponders" || e.name === "NoResponders") {
    return new FleetError(
      "unavailable",
      "no_responders",
      `${op}: no session store is running (no responders on ${subject})`,
      {
        cause: err,
      },
    );
  }
  if (e.name === "TimeoutError" || e.cause?.name === "TimeoutError" || /timeout/i.test(e.message ?? "")) {
    return new FleetError("timeout", "timeout", `${op}: the session store did not answer within ${timeoutMs} ms`, {
      cause: err,
    });
  }
  return new FleetError("unavailable", "request_failed", `${op}: ${e.message ?? String(err)}`, { cause: err });
}
