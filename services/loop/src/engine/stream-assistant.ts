// One LLM call: context → transformContext → convertToLlm → streamFn, with pi's message events.
import { ABORTED_ERROR_MESSAGE, type AssistantMessage, type AssistantStreamEvent } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import {
  advanceDelta,
  decideProviderChunk,
  deltaEvent,
  isStreamDelta,
  messageEnd,
  type OpenStream,
  stepProviderChunk,
  unstartedMessageStart,
} from "../session-core/provider-chunk.js";
import { foreignErrorText } from "../session-core/turn-boundary.js";
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
  type Sink,
} from "./run-scope.js";
import type { LoopContext, LoopEventBody, StreamOptions } from "./types.js";

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
    return endCall(context, run, abortedChunk(message), message, false);
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
  const decideChunk = run.sink.emitDecidedNow ? chunkDecider(run) : undefined;
  try {
    while (true) {
      const next = signal?.aborted ? ABORTED : await readNext(reader);
      const partial = stream.partial;
      if (next === ABORTED) {
        cancelRead(reader);
        const base = partial ?? syntheticAssistant(model, "aborted", ABORTED_ERROR_MESSAGE, ports.now());
        const message = abortedAssistant(base, ports.now());
        return await endCall(context, run, abortedChunk(message), message, partial !== undefined);
      }
      if (next.done) {
        const base = partial ?? syntheticAssistant(model, "error", STREAM_ENDED_EARLY, ports.now());
        const message = {
          ...base,
          content: finishedContent(base.content),
          stopReason: "error" as const,
          errorMessage: STREAM_ENDED_EARLY,
        };
        return await endCall(
          context,
          run,
          { type: "error", reason: "error", error: message },
          message,
          partial !== undefined,
        );
      }
      const chunk = next.value.type === "error" ? providerError(next.value) : next.value;
      if (decideChunk && isStreamDelta(chunk)) {
        // The fold decides the delta's event; the engine's partial (for an abort) advances in place.
        if (!advanceDelta(stream, chunk)) continue;
        const accepted = emitChunk(decideChunk, chunk, run);
        if (accepted !== RESOLVED) await accepted;
        continue;
      }
      const event = stepProviderChunk(stream, chunk);
      if (event) {
        const accepted = decideChunk ? emitChunk(decideChunk, chunk, run) : run.sink.emit(event);
        if (accepted !== RESOLVED) await accepted;
      } else if (stream.final) {
        return await endCall(context, run, chunk, stream.final, partial !== undefined);
      }
    }
  } finally {
    disposeReader(reader);
  }
}

/** A provider's `error` chunk, its errorMessage never read as a resumed run's cut close (`foreignErrorText`). */
function providerError(chunk: AssistantStreamEvent & { type: "error" }): AssistantStreamEvent {
  const text = chunk.error.errorMessage;
  if (text === undefined) return chunk;
  const own = foreignErrorText(text);
  return own === text ? chunk : { ...chunk, error: { ...chunk.error, errorMessage: own } };
}

/** The `error` chunk that says how an aborted call ended (`message`: stopReason `aborted`, pi's text). */
const abortedChunk = (message: AssistantMessage): AssistantStreamEvent => ({
  type: "error",
  reason: "aborted",
  error: message,
});

/**
 * The decision of a chunk that streams the message (`start`, or a delta of a started one), for one
 * LLM call: the session's fold's (`decideProviderChunk`), or, when it decides nothing, the engine's
 * own step (the same mapping: `start`'s copy of the provider's partial, the delta's `deltaEvent`).
 */
function chunkDecider(run: RunScope): ((chunk: AssistantStreamEvent) => readonly DraftEvent[]) | undefined {
  const decide = run.ports.decideProviderChunk;
  if (!decide) return undefined;
  const newId = run.ports.newId;
  return (chunk) => decide(chunk) ?? [{ id: newId(), body: ownChunkEvent(chunk) }];
}

function ownChunkEvent(chunk: AssistantStreamEvent): LoopEventBody {
  if (isStreamDelta(chunk)) return deltaEvent(chunk);
  return decideProviderChunk(undefined, chunk).events[0] as LoopEventBody;
}

/** Emits a chunk's decision at once when nothing is queued before it (`emitDecidedNow`: no promise per delta). */
function emitChunk(
  decide: (chunk: AssistantStreamEvent) => readonly DraftEvent[],
  chunk: AssistantStreamEvent,
  run: RunScope,
): Promise<unknown> {
  return (run.sink as Required<Sink>).emitDecidedNow(decide, chunk);
}

/**
 * Ends the call with its ending chunk (`done` or `error`; the engine makes an `error` one for an
 * abort or a stream that ended early): decided on the session's fold and emitted in the delivery
 * order when the ports can (the message is the one its `message_end` carries), else, or when the
 * fold decides nothing, the engine's own `final` (`finish`).
 */
async function endCall(
  context: LoopContext,
  run: RunScope,
  chunk: AssistantStreamEvent,
  final: AssistantMessage,
  started: boolean,
): Promise<AssistantMessage> {
  const decide = run.ports.decideProviderChunk;
  if (decide && run.sink.emitDecided) {
    const drafts = await emitDecision(run, () => decide(chunk));
    for (const { body } of drafts) {
      if (body.type !== "message_end" || body.message.role !== "assistant") continue;
      context.messages.push(body.message);
      return body.message;
    }
  }
  return finish(context, run, final, started);
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
