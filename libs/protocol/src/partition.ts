/** Default partition count P, stored in KV `fleet_config` under `partitions` and fixed once written. */
export const DEFAULT_PARTITIONS = 16;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a 32-bit over the UTF-8 bytes of `input`, as an unsigned integer. */
export function fnv1a32(input: string): number {
  const bytes = new TextEncoder().encode(input);
  let hash = FNV_OFFSET;
  for (const byte of bytes) {
    hash ^= byte;
    hash = Math.imul(hash, FNV_PRIME) >>> 0;
  }
  return hash >>> 0;
}

/** `p = fnv1a32(utf8(sessionId)) % P`. Contract: `partitions` is a positive integer. */
export function partitionOf(sessionId: string, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1) throw new Error(`partitions must be a positive integer`);
  return fnv1a32(sessionId) % partitions;
}
