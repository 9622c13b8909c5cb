/**
 * Whether a partition's command consumer must be made again: while a worker holds the partition,
 * commands pending acknowledgement that none of its pulls holds should come back within one ack
 * wait. More pending than held, without a break, for `stuckAfterMs` means they will not.
 * `stalledSince` is when the current stretch began (undefined: none); the caller keeps it.
 */
export function decideStall(input: {
  pending: number;
  held: number;
  stalledSince: number | undefined;
  now: number;
  stuckAfterMs: number;
}): { remake: boolean; stalledSince: number | undefined } {
  if (input.pending <= input.held) return { remake: false, stalledSince: undefined };
  const since = input.stalledSince ?? input.now;
  if (input.now - since < input.stuckAfterMs) return { remake: false, stalledSince: since };
  return { remake: true, stalledSince: undefined };
}
