import { randomFillSync } from "node:crypto";

// Random bytes come from a pooled buffer refilled 4 KiB at a time: one syscall per 256 ids.
const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;

/** A UUIDv7 string: 48-bit Unix ms timestamp, version 7, RFC 4122 variant, 74 random bits. */
export function newId(now: number = Date.now()): string {
  if (offset + 16 > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  // The 16 bytes are written in place (the pool's bytes are used once) and read as hex once.
  const at = offset;
  offset += 16;
  pool.writeUIntBE(now, at, 6);
  pool[at + 6] = ((pool[at + 6] as number) & 0x0f) | 0x70;
  pool[at + 8] = ((pool[at + 8] as number) & 0x3f) | 0x80;
  const h = pool.toString("hex", at, at + 16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
