// One LLM call: context → transformContext → convertToLlm → streamFn, with pi's message events.
import { ABORTED_ERROR_MESSAGE, type AssistantMessage, type AssistantStreamEvent } from "@fleet/protocol";
import {
  messageEnd,
  type OpenStream,
  stepProviderChunk,
  unstartedMessageStart,
} from "../session-core/provider-chunk.js";
import { abortedAssistant, defaultConvertToLlm, finishedContent, syntheticAssistant } from "./messages.js";
import {
  ABORTED,
  type AbortWatch,
  type AbortWatcher,
  emitDecision,
  isPromise,
  type LoopState,
  noop,
  RESOLVED,
  type RunScope,
} from "./run-scope.js";
import type { EnginePorts, LoopContext, StreamOptions } from "./types.js";

/** The delta step of the one chunk mapping (`../session-core/provider-chunk.ts`), for the engine's other readers. */
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
  /** The message so far (owned by this call), advanced in place by the one chunk mapping. */
  const stream: OpenStream = { partial: undefined, final: undefined };
  try {
    while (true) {
      const next = signal?.aborted ? ABORTED : await readNext(reader);
      const partial = stream.partial;
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
      const event = stepProviderChunk(stream, next.value);
      if (event) {
        const accepted = run.sink.emit(event);
        if (accepted !== RESOLVED) await accepted;
      } else if (stream.final) {
        const decided = run.ports.decideProviderChunk && run.sink.emitDecided ? decideEnd(next.value, run) : undefined;
        if (decided) {
          const message = await decided;
          if (message) {
            context.messages.push(message);
            return message;
          }
        }
        return await finish(context, run, stream.final, partial !== undefined);
      }
    }
  } finally {
    disposeReader(reader);
  }
}

/**
 * The chunk that ended the call, decided on the session's fold (`decideProviderChunk`) and emitted
 * in the delivery order: resolves with the message its `message_end` carries, or undefined when the
 * fold decided nothing (nothing was emitted).
 */
function decideEnd(chunk: AssistantStreamEvent, run: RunScope): Promise<AssistantMessage | undefined> {
  const decide = run.ports.decideProviderChunk as NonNullable<EnginePorts["decideProviderChunk"]>;
  return emitDecision(run, () => decide(chunk)).then((drafts) => {
    for (const { body } of drafts)
      if (body.type === "message_end" && body.message.role === "assistant") return body.message;
    return undefined;
  });
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
    const sent = run.sink.emit(unstartedMessageStart(message));
    if (sent !== RESOLVED) await sent;
  }
  const ended = run.sink.emit(messageEnd(message));
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
