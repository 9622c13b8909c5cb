// Deterministic trace and span ids: the same run gives the same ids every time it is derived.

const FNV64_OFFSET = 0xcbf29ce484222325n;
const FNV64_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;

/** FNV-1a 64-bit over the UTF-8 bytes of `input`, as 16 lower-case hex digits. */
function fnv1a64Hex(input: string): string {
  let hash = FNV64_OFFSET;
  for (const byte of new TextEncoder().encode(input)) {
    hash ^= BigInt(byte);
    hash = (hash * FNV64_PRIME) & MASK64;
  }
  // W3C forbids all-zero ids; FNV of a short input practically never gives 0, but never emit it.
  return (hash === 0n ? 1n : hash).toString(16).padStart(16, "0");
}

/** The trace id of a run without a caller's trace context: a hash of the run id (32 hex). */
export function derivedTraceId(runId: string): string {
  return fnv1a64Hex(`fleet-trace:a:${runId}`) + fnv1a64Hex(`fleet-trace:b:${runId}`);
}

/** A span's id from its run and a key unique within the run (`invoke_agent`, `tool:<id>`, …) (16 hex). */
export function derivedSpanId(runId: string, key: string): string {
  return fnv1a64Hex(`fleet-span:${runId}:${key}`);
}
