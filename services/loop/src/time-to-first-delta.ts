import type { AssistantStreamEvent } from "@fleet/protocol";

/**
 * Passes a stream through, reporting the time from the request to its first content delta. A plain
 * iterator rather than an async generator: after the first delta each item costs no extra promise.
 */
export function timeToFirstDelta(
  stream: AsyncIterable<AssistantStreamEvent>,
  now: () => number,
  report: (ms: number) => void,
): AsyncIterable<AssistantStreamEvent> {
  return {
    [Symbol.asyncIterator]() {
      const inner = stream[Symbol.asyncIterator]();
      const started = now();
      let first = true;
      const check = (r: IteratorResult<AssistantStreamEvent>) => {
        if (first && !r.done && r.value.type.endsWith("_delta")) {
          first = false;
          report(now() - started);
        }
        return r;
      };
      return {
        next: () => (first ? inner.next().then(check) : inner.next()),
        return: (value?: unknown) => inner.return?.(value) ?? Promise.resolve({ done: true as const, value }),
        throw: (err?: unknown) => inner.throw?.(err) ?? Promise.reject(err),
      };
    },
  };
}
