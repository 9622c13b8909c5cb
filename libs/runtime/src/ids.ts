import { randomFillSync } from "node:crypto";

// Random bytes come from a pooled buffer refilled 4 KiB at a time: one syscall per 409 ids.
const POOL_SIZE = 4096;
const RANDOM_BYTES = 10;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;
/** Two hex digits of each byte value. */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const TWO_POW_24 = 0x1000000;

/** A UUIDv7 string: 48-bit Unix ms timestamp, version 7, RFC 4122 variant, 74 random bits. */
export function newId(now: number = Date.now()): string {
  if (offset + RANDOM_BYTES > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  // Written from a table of hex pairs: no buffer-to-string conversion or slicing per id.
  const r = offset;
  offset += RANDOM_BYTES;
  const p = pool as unknown as number[];
  const hi = Math.floor(now / TWO_POW_24) % TWO_POW_24;
  const lo = now % TWO_POW_24;
  return `${HEX[(hi >>> 16) & 255]}${HEX[(hi >>> 8) & 255]}${HEX[hi & 255]}${HEX[(lo >>> 16) & 255]}-${HEX[(lo >>> 8) & 255]}${HEX[lo & 255]}-${HEX[((p[r] as number) & 0x0f) | 0x70]}${HEX[p[r + 1] as number]}-${HEX[((p[r + 2] as number) & 0x3f) | 0x80]}${HEX[p[r + 3] as number]}-${HEX[p[r + 4] as number]}${HEX[p[r + 5] as number]}${HEX[p[r + 6] as number]}${HEX[p[r + 7] as number]}${HEX[p[r + 8] as number]}${HEX[p[r + 9] as number]}`;
}
