import { eventStreamName, storeGroupConsumer } from "@fleet/protocol";
import { type ConsumerInfo, JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";

/** Stream group `group` of `groups` (K). */
export interface GroupRef {
  group: number;
  groups: number;
}

/** `store-g<g>` delivering from `startSeq` (1 = the protocol's plain `deliver_policy: all` config). */
export function storeConsumerConfig(
  group: number,
  startSeq: number,
): Record<string, unknown> & { durable_name: string } {
  const base = storeGroupConsumer(group);
  return startSeq <= 1 ? base : { ...base, deliver_policy: "by_start_sequence", opt_start_seq: startSeq };
}

export type ConsumerPreparation = "reset" | "created" | "takeover" | "drift" | "kept";

/**
 * The settings of `store-g<g>` that must match the protocol's (anything but where delivery starts).
 * `filter_subject` must be absent: a filter makes nats-server 2.9 match every stored message.
 */
const CHECKED = ["filter_subject", "ack_policy", "ack_wait", "max_ack_pending", "max_deliver"] as const;

/** Names of the checked settings where `actual` differs from the protocol's config. */
export function storeConsumerDrift(group: number, actual: Record<string, unknown>): string[] {
  const expected: Record<string, unknown> = storeGroupConsumer(group);
  return CHECKED.filter((k) => (actual[k] || undefined) !== (expected[k] || undefined));
}

/**
 * Makes `store-g<g>` ready for a new holder of group `g`.
 * - `reset` (the active namespace has not been fed by this group's consumer yet): recreate it to
 *   deliver from the namespace's `startSeq`.
 * - missing: create it from `startSeq`.
 * - messages still pending acknowledgement (a holder died or was deposed, or a batch failed): recreate
 *   it from the ack floor + 1 so they are redelivered now rather than after `ack_wait`.
 * - `drift` (created with other settings, e.g. `ack_policy: explicit` before the store acked per
 *   batch): recreate it from the ack floor + 1 with the protocol's settings.
 * Every redelivered event at or below a session's lastSeq is a no-op, so moving the start back never
 * loses or doubles anything.
 */
export async function prepareStoreConsumer(
  jsm: JetStreamManager,
  ref: GroupRef,
  opts: { startSeq: number; reset: boolean },
): Promise<ConsumerPreparation> {
  const name = storeGroupConsumer(ref.group).durable_name;
  const stream = eventStreamName(ref.group, ref.groups);
  // Only "not found" means missing. Any other failure (a consumer without a leader after a node was
  // lost, a timeout) makes it unknown: it is deleted and made again from the namespace's startSeq,
  // which is safe (redelivered events at or below a session's lastSeq are no-ops).
  let info: ConsumerInfo | null = null;
  let unknown = false;
  try {
    info = await jsm.consumers.info(stream, name);
  } catch (err) {
    if (!isConsumerNotFound(err)) unknown = true;
  }
  const drifted = info
    ? storeConsumerDrift(ref.group, info.config as unknown as Record<string, unknown>).length > 0
    : false;
  if (!opts.reset && info && info.num_ack_pending === 0 && !drifted) return "kept";
  const startSeq = opts.reset || !info ? opts.startSeq : Math.max(opts.startSeq, info.ack_floor.stream_seq + 1);
  // A delete that fails leaves the old consumer, and `add` with another start is then refused: throw,
  // and the caller tries again.
  if (info || unknown) await deleteConsumer(jsm, stream, name);
  await jsm.consumers.add(stream, storeConsumerConfig(ref.group, startSeq));
  if (opts.reset) return "reset";
  if (!info) return unknown ? "takeover" : "created";
  return info.num_ack_pending > 0 ? "takeover" : "drift";
}

/** Deletes a consumer; false when it did not exist. */
async function deleteConsumer(jsm: JetStreamManager, stream: string, name: string): Promise<boolean> {
  try {
    return await jsm.consumers.delete(stream, name);
  } catch (err) {
    if (!isConsumerNotFound(err)) throw err;
    return false;
  }
}

const isConsumerNotFound = (err: unknown) =>
  err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;

/**
 * Deletes the per-partition consumers `store-p<p>` of `partitions` that a store made on `stream`
 * before stream groups (change 56): on nats-server 2.9 each would keep matching every stored event.
 * By name (the store may delete its consumers, not list a stream's). Returns how many existed.
 */
export async function deleteLegacyPartitionConsumers(
  jsm: JetStreamManager,
  stream: string,
  partitions: readonly number[],
): Promise<number> {
  let deleted = 0;
  for (const p of partitions) if (await deleteConsumer(jsm, stream, `store-p${p}`)) deleted++;
  return deleted;
}
