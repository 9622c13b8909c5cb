// The LLM port with content by reference resolved: the provider gets every text and image inline.
import { type AssistantStreamEvent, hasBlobBlocks } from "@fleet/protocol";
import { type BlobAccess, resolveBlobBlocks } from "@fleet/runtime";
import type { StreamFn } from "./engine/index.js";
import { failedCall } from "./provider-port.js";

/**
 * Wraps `inner`: the context's messages are resolved (objects of `fleet_blobs`, read once and cached
 * by `blobs`) before the call. An object that cannot be read ends the call as an error message
 * (`Cannot read content by reference: …`), as a provider error would. A context with no block by
 * reference is `inner`'s stream as it is (called when iterated): no layer per streamed event.
 */
export function resolvingBlobs(inner: StreamFn, blobs: BlobAccess, now: () => number): StreamFn {
  return (context, options, signal) => {
    if (!anyBlobBlocks(context.messages)) {
      return { [Symbol.asyncIterator]: () => inner(context, options, signal)[Symbol.asyncIterator]() };
    }
    return {
      async *[Symbol.asyncIterator](): AsyncGenerator<AssistantStreamEvent> {
        let messages: typeof context.messages;
        try {
          messages = await resolveBlobBlocks(context.messages, blobs);
        } catch (err) {
          yield failedCall(options.model, `Cannot read content by reference: ${(err as Error).message}`, now());
          return;
        }
        yield* inner(messages === context.messages ? context : { ...context, messages }, options, signal);
      },
    };
  };
}

/**
 * Context messages walked already and found to hold no block by reference. A message is a value of
 * the log: once in the fold it is never changed (a block by reference is made when its message is),
 * so each is walked once, not on every LLM call of the session.
 */
const walked = new WeakSet<object>();

/** Whether any message holds a block by reference (`hasBlobBlocks`), walking each message once. */
export function anyBlobBlocks(messages: readonly object[]): boolean {
  for (const message of messages) {
    if (walked.has(message)) continue;
    if (hasBlobBlocks(message)) return true;
    walked.add(message);
  }
  return false;
}
