/**
 * Whether a partition's command consumer must be made again. While a worker holds the partition, a
 * stretch of any of these for `stuckAfterMs` means commands will not reach it:
 * - more commands pending acknowledgement than its pulls hold (they should come back within one ack
 *   wait);
 * - commands stored and not delivered, with room under `max_ack_pending`, and nothing delivered since
 *   the previous check (a consumer that stopped delivering: seen on a 3-node nats-server 2.9 cluster
 *   after leader elections, with its heartbeats still arriving);
 * - more commands stored on the partition's subjects than the consumer has pending and undelivered
 *   together: it moved past commands without delivering them (the work-queue stream removes a
 *   command once acknowledged, so what is stored and not accounted for was skipped; seen on the same
 *   cluster after a node was killed).
 * `stalledSince` is when the current stretch began (undefined: none); the caller keeps it and the
 * consumer's delivered sequence of the previous check.
 * `sweep`: the stretch ends with commands skipped, so besides making the consumer again the caller
 * reads the stored commands from the stream itself (a consumer made again on a 3-node nats-server
 * 2.9 cluster was seen to count 0 undelivered while the stream's leader still stored 2).
 */
export function decideStall(input: {
  /** Delivered, not acknowledged (`num_ack_pending`). */
  pending: number;
  /** Stored, not delivered yet (`num_pending`). */
  undelivered: number;
  /** Commands the stream holds on the partition's subjects. */
  stored: number;
  /** The consumer's delivered sequence now, and at the previous check (undefined: first check). */
  delivered: number;
  deliveredBefore: number | undefined;
  maxAckPending: number;
  held: number;
  stalledSince: number | undefined;
  now: number;
  stuckAfterMs: number;
}): { remake: boolean; sweep: boolean; stalledSince: number | undefined } {
  const lost = input.pending > input.held;
  const silent =
    input.undelivered > 0 && input.delivered === input.deliveredBefore && input.pending < input.maxAckPending;
  const skipped = input.stored > input.pending + input.undelivered;
  if (!lost && !silent && !skipped) return { remake: false, sweep: false, stalledSince: undefined };
  const since = input.stalledSince ?? input.now;
  if (input.now - since < input.stuckAfterMs) return { remake: false, sweep: false, stalledSince: since };
  return { remake: true, sweep: skipped, stalledSince: undefined };
}
