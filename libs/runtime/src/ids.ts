import { randomFillSync } from "node:crypto";

// Random bytes come from a pooled buffer refilled 4 KiB at a time: one syscall per 409 ids.
const POOL_SIZE = 4096;
const RANDOM_BYTES = 10;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;
/** The two hex digits of each byte value, as their two character codes (low byte first). */
const HEX_PAIRS = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  const pair = i.toString(16).padStart(2, "0");
  HEX_PAIRS[i] = pair.charCodeAt(0) | (pair.charCodeAt(1) << 8);
}
/** The id's characters are written here, then read as one string: no intermediate strings per id. */
const text = Buffer.alloc(36, "-");
const TWO_POW_24 = 0x1000000;

function putHex(at: number, byte: number): void {
  const pair = HEX_PAIRS[byte] as number;
  text[at] = pair & 0xff;
  text[at + 1] = pair >>> 8;
}

/** A UUIDv7 string: 48-bit Unix ms timestamp, version 7, RFC 4122 variant, 74 random bits. */
export function newId(now: number = Date.now()): string {
  if (offset + RANDOM_BYTES > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const r = offset;
  offset += RANDOM_BYTES;
  const hi = Math.floor(now / TWO_POW_24) % TWO_POW_24;
  const lo = now % TWO_POW_24;
  putHex(0, (hi >>> 16) & 0xff);
  putHex(2, (hi >>> 8) & 0xff);
  putHex(4, hi & 0xff);
  putHex(6, (lo >>> 16) & 0xff);
  putHex(9, (lo >>> 8) & 0xff);
  putHex(11, lo & 0xff);
  putHex(14, ((pool[r] as number) & 0x0f) | 0x70);
  putHex(16, pool[r + 1] as number);
  putHex(19, ((pool[r + 2] as number) & 0x3f) | 0x80);
  putHex(21, pool[r + 3] as number);
  for (let i = 4; i < RANDOM_BYTES; i++) putHex(24 + 2 * (i - 4), pool[r + i] as number);
  return text.toString("latin1", 0, 36);
}
