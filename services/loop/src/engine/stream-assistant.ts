// One LLM call: context → transformContext → convertToLlm → streamFn, with pi's message events.
import { ABORTED_ERROR_MESSAGE, type AssistantMessage, type AssistantStreamEvent } from "@fleet/protocol";
import { applyDeltaInPlace, errorChunkMessage } from "../session-core/provider-chunk.js";
import { abortedAssistant, defaultConvertToLlm, finishedContent, syntheticAssistant } from "./messages.js";
import {
  ABORTED,
  type AbortWatch,
  type AbortWatcher,
  isPromise,
  type LoopState,
  noop,
  RESOLVED,
  type RunScope,
} from "./run-scope.js";
import type { LoopContext, StreamOptions } from "./types.js";

/** Shared with the pure core (`../session-core/provider-chunk.ts`), which does the same mapping per chunk. */
export { applyDeltaInPlace, applyStreamDelta } from "../session-core/provider-chunk.js";

export const STREAM_ENDED_EARLY = "Stream ended without a done or error event";

/**
 * Streams one assistant message and appends the final message to `context.messages`.
 *
 * Events (pi): `message_start` at the provider's `start` (with a copy of its partial), one
 * `message_update {deltas:[delta]}` per content delta, `message_end` with the final message; when
 * the stream ends before `start`, `message_start` and `message_end` come back to back.
 * Deltas before `start` are ignored (pi).
 *
 * Abort: as soon as `signal` aborts the engine stops reading and finishes the message itself: the
 * content streamed so far, stopReason `aborted`, errorMessage `Request was aborted`. An `error`
 * event with reason `aborted` gets that errorMessage too.
 * A streamFn that throws propagates (the caller's failure path).
 */
export async function streamAssistantResponse(loop: LoopState, run: RunScope): Promise<AssistantMessage> {
  const { signal, ports } = run;
  const { context, config, model } = loop;
  if (signal?.aborted) {
    const message = syntheticAssistant(model, "aborted", ABORTED_ERROR_MESSAGE, ports.now());
    return finish(context, run, message, false);
  }

  let messages = context.messages;
  if (config.transformContext) messages = await config.transformContext(messages, signal);
  const converted = (config.convertToLlm ?? defaultConvertToLlm)(messages);
  const llmMessages = isPromise(converted) ? await converted : converted;
  const options: StreamOptions = { model, thinkingLevel: loop.thinkingLevel };
  if (config.maxTokens !== undefined) options.maxTokens = config.maxTokens;
  if (config.sessionId !== undefined) options.sessionId = config.sessionId;
  const iterator = ports
    .streamFn({ systemPrompt: context.systemPrompt, messages: llmMessages, tools: context.tools }, options, signal)
    [Symbol.asyncIterator]();
  const reader = abortableReader(iterator, signal ? run.abort : undefined);
  /** The message so far: owned by this call (its content array is never handed out). */
  let partial: AssistantMessage | undefined;
  try {
    while (true) {
      const next = signal?.aborted ? ABORTED : await readNext(reader);
      if (next === ABORTED) {
        cancelRead(reader);
        const base = partial ?? syntheticAssistant(model, "aborted", ABORTED_ERROR_MESSAGE, ports.now());
        return await finish(context, run, abortedAssistant(base, ports.now()), partial !== undefined);
      }
      if (next.done) {
        const base = partial ?? syntheticAssistant(model, "error", STREAM_ENDED_EARLY, ports.now());
        const message = {
          ...base,
          content: finishedContent(base.content),
          stopReason: "error" as const,
          errorMessage: STREAM_ENDED_EARLY,
        };
        return await finish(context, run, message, partial !== undefined);
      }
      const event: AssistantStreamEvent = next.value;
      switch (event.type) {
        case "start":
          partial = { ...event.partial, content: event.partial.content.slice() };
          {
            const sent = run.sink.emit({
              type: "message_start",
              message: { ...partial, content: partial.content.slice() },
            });
            if (sent !== RESOLVED) await sent;
          }
          break;
        case "done":
          return await finish(context, run, event.message, partial !== undefined);
        case "error":
          return await finish(context, run, errorChunkMessage(event), partial !== undefined);
        default:
          if (partial) {
            applyDeltaInPlace(partial.content, event);
            const accepted = run.sink.emit({ type: "message_update", deltas: [event] });
            if (accepted !== RESOLVED) await accepted;
          }
      }
    }
  } finally {
    disposeReader(reader);
  }
}

/** Appends the final message to the context and emits its message_start (unless streamed) and message_end. */
async function finish(
  context: LoopContext,
  run: RunScope,
  message: AssistantMessage,
  started: boolean,
): Promise<AssistantMessage> {
  context.messages.push(message);
  if (!started) {
    const sent = run.sink.emit({ type: "message_start", message: { ...message } });
    if (sent !== RESOLVED) await sent;
  }
  const ended = run.sink.emit({ type: "message_end", message });
  if (ended !== RESOLVED) await ended;
  return message;
}

/**
 * Reads a provider's iterator, but gives up as soon as the signal aborts, even when the provider
 * never answers. One abort listener per stream; no promise outlives its read. A literal (one fixed
 * hidden class for every stream), driven by the functions below.
 */
interface AbortableReader extends AbortWatcher {
  readonly iterator: AsyncIterator<AssistantStreamEvent>;
  readonly abort: AbortWatch | undefined;
  /** Resolves the pending read with ABORTED (set while a read is pending). */
  wake: ((value: typeof ABORTED) => void) | undefined;
  /** The executor of every read: bound to this reader once. */
  read: (
    resolve: (value: IteratorResult<AssistantStreamEvent> | typeof ABORTED) => void,
    reject: (reason: unknown) => void,
  ) => void;
}

function abortableReader(
  iterator: AsyncIterator<AssistantStreamEvent>,
  abort: AbortWatch | undefined,
): AbortableReader {
  const reader: AbortableReader = { iterator, abort, wake: undefined, read: noop, onAbort: wakeReader };
  reader.read = readInto.bind(undefined, reader);
  abort?.watch(reader);
  return reader;
}

function wakeReader(this: AbortableReader): void {
  this.wake?.(ABORTED);
}

function readNext(reader: AbortableReader): Promise<IteratorResult<AssistantStreamEvent> | typeof ABORTED> {
  if (!reader.abort) return reader.iterator.next();
  return new Promise(reader.read);
}

/** Resolves with the provider's answer, or with ABORTED on abort. */
function readInto(
  reader: AbortableReader,
  resolve: (value: IteratorResult<AssistantStreamEvent> | typeof ABORTED) => void,
  reject: (reason: unknown) => void,
): void {
  reader.wake = resolve;
  reader.iterator.next().then(resolve, reject);
}

/** Asks the provider to stop (its late answers are ignored). */
function cancelRead(reader: AbortableReader): void {
  void Promise.resolve()
    .then(() => reader.iterator.return?.())
    .catch(noop);
}

function disposeReader(reader: AbortableReader): void {
  reader.wake = undefined;
  reader.abort?.unwatch(reader);
}
