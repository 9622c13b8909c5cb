// Deterministic trace and span ids: the same run gives the same ids every time it is derived.

const encoder = new TextEncoder();
const hex4 = (limb: number) => limb.toString(16).padStart(4, "0");

/**
 * FNV-1a 64-bit over the UTF-8 bytes of `input`, as 16 lower-case hex digits. Computed in four
 * 16-bit limbs (the prime is 2^40 + 0x1b3): the same digits as with 64-bit integers, without a
 * BigInt per byte.
 */
function fnv1a64Hex(input: string): string {
  // The offset basis 0xcbf29ce484222325, low limb first.
  let h0 = 0x2325;
  let h1 = 0x8422;
  let h2 = 0x9ce4;
  let h3 = 0xcbf2;
  for (const byte of encoder.encode(input)) {
    h0 ^= byte;
    const t0 = h0 * 0x1b3;
    const t1 = h1 * 0x1b3 + (t0 >>> 16);
    const t2 = h2 * 0x1b3 + h0 * 0x100 + (t1 >>> 16);
    h3 = (h3 * 0x1b3 + h1 * 0x100 + (t2 >>> 16)) & 0xffff;
    h0 = t0 & 0xffff;
    h1 = t1 & 0xffff;
    h2 = t2 & 0xffff;
  }
  // W3C forbids all-zero ids; FNV of a short input practically never gives 0, but never emit it.
  if ((h0 | h1 | h2 | h3) === 0) return "0000000000000001";
  return hex4(h3) + hex4(h2) + hex4(h1) + hex4(h0);
}

/** The trace id of a run without a caller's trace context: a hash of the run id (32 hex). */
export function derivedTraceId(runId: string): string {
  return fnv1a64Hex(`fleet-trace:a:${runId}`) + fnv1a64Hex(`fleet-trace:b:${runId}`);
}

/** A span's id from its run and a key unique within the run (`invoke_agent`, `tool:<id>`, …) (16 hex). */
export function derivedSpanId(runId: string, key: string): string {
  return fnv1a64Hex(`fleet-span:${runId}:${key}`);
}
