// A `streamFn` that replays a script: for tests, benchmarks and offline use. No timers of its own:
// a rate needs an injected `sleep`.
import {
  ABORTED_ERROR_MESSAGE,
  type AssistantMessage,
  type AssistantStreamEvent,
  emptyUsage,
  type StopReason,
  type Usage,
} from "@fleet/protocol";
import { thrownText } from "./messages.js";
import { type Script, type ScriptBlock, type ScriptOptions, ScriptTurn, type ScriptTurnInput } from "./script.js";
import type { LlmContext, StreamFn, StreamOptions } from "./types.js";

/** Waits `ms`; resolves early when `signal` aborts. Never rejects. */
export type Sleep = (ms: number, signal: AbortSignal | undefined) => Promise<void>;

export interface ScriptRequest {
  context: LlmContext;
  options: StreamOptions;
  /** 0 for the first LLM call. */
  callIndex: number;
}

/** A scripted response, or (in code) a function of the request returning one. */
export type ScriptStep = ScriptTurnInput | ((request: ScriptRequest) => ScriptTurnInput | Promise<ScriptTurnInput>);

export interface ScriptedProviderOptions extends Partial<ScriptOptions> {
  steps: readonly ScriptStep[];
  now: () => number;
  /** Required when a rate is set. */
  sleep?: Sleep;
  /** Keep every request in `requests` (default true; turn off for long-lived providers). */
  recordRequests?: boolean;
}

export interface ScriptedProvider {
  streamFn: StreamFn;
  /** Every request received, in order (empty with `recordRequests: false`). */
  readonly requests: readonly ScriptRequest[];
  /** Steps not consumed yet. */
  readonly remaining: number;
  append(...steps: ScriptStep[]): void;
}

export const NO_MORE_STEPS = "No more scripted responses";

/** Builds a provider from a parsed script (`parseScript`). */
export function scriptedProviderFromScript(
  script: Script,
  ports: { now: () => number; sleep?: Sleep },
): ScriptedProvider {
  const { turns, ...options } = script;
  return createScriptedProvider({ ...options, ...ports, steps: turns });
}

/**
 * Each call consumes the next step and streams it like pi-ai's faux provider: `start`, then per
 * block `*_start`, one `*_delta` per chunk (the whole block unless `chunkChars`), `*_end`, then
 * `done` (or `error` for an error / aborted stopReason). `toolcall_start` carries id and name; the
 * arguments stream as JSON text. With a rate, `sleep` runs before every delta. The signal is
 * checked before every event (so also after every sleep); an abort ends the stream with
 * `error {reason: "aborted"}` holding the content streamed so far. Messages carry `provider:
 * "scripted"`, the script's `api` and model, the step's usage (default: chars/4 estimates).
 * A step function that throws, or no step left, gives an `error` response with that text.
 * Throws at creation (a programmer mistake) when a rate is set without a `sleep` port; a rate
 * returned by a step function without `sleep` is ignored.
 */
export function createScriptedProvider(options: ScriptedProviderOptions): ScriptedProvider {
  return new Scripted(options);
}

class Scripted implements ScriptedProvider {
  readonly streamFn: StreamFn;
  readonly requests: ScriptRequest[] = [];
  private calls = 0;
  private readonly queue: ScriptStep[];
  private readonly options: ScriptedProviderOptions;
  private readonly api: string;

  constructor(options: ScriptedProviderOptions) {
    let rated = options.tokensPerSecond !== undefined;
    for (const step of options.steps) if (typeof step === "object" && step.tokensPerSecond !== undefined) rated = true;
    if (rated && !options.sleep) throw new Error("scripted provider: a tokensPerSecond rate needs a sleep port");
    this.options = options;
    this.queue = options.steps.slice();
    this.api = options.api ?? "scripted";
    this.streamFn = this.stream.bind(this);
  }

  get remaining(): number {
    return this.queue.length;
  }

  append(...steps: ScriptStep[]): void {
    this.queue.push(...steps);
  }

  private stream(
    context: LlmContext,
    streamOptions: StreamOptions,
    signal: AbortSignal | undefined,
  ): AsyncIterable<AssistantStreamEvent> {
    const options = this.options;
    const request: ScriptRequest = { context, options: streamOptions, callIndex: this.calls++ };
    if (options.recordRequests !== false) this.requests.push(request);
    const step = this.queue.shift();
    if (step !== undefined && typeof step !== "function") {
      let turn: ScriptTurn | undefined;
      try {
        turn = parseTurn(step);
      } catch {
        // reported by the generator below
      }
      if (turn && (!options.sleep || (turn.tokensPerSecond ?? options.tokensPerSecond) === undefined)) {
        const model = options.model ?? streamOptions.model.modelId;
        const message = base(this.api, model, options.now(), stopReasonOf(turn), turn.usage);
        return scriptedStream(scriptEvents(turn, message, context, options.chunkChars), message, signal, options.now);
      }
    }
    return this.play(request, step, signal);
  }

  /** The general path: step functions and rates (sleeps between deltas). */
  private async *play(
    request: ScriptRequest,
    step: ScriptStep | undefined,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<AssistantStreamEvent> {
    const options = this.options;
    const api = this.api;
    const { context, options: streamOptions } = request;
    const model = options.model ?? streamOptions.model.modelId;
    let turn: ScriptTurn;
    try {
      if (step === undefined) throw new Error(NO_MORE_STEPS);
      turn = parseTurn(typeof step === "function" ? await step(request) : step);
    } catch (error) {
      const message = base(api, model, options.now(), "error", emptyUsage());
      yield { type: "error", reason: "error", error: { ...message, errorMessage: thrownText(error) } };
      return;
    }

    const message = base(api, model, options.now(), stopReasonOf(turn), turn.usage);
    const events = scriptedStream(
      scriptEvents(turn, message, context, options.chunkChars),
      message,
      signal,
      options.now,
    )[Symbol.asyncIterator]();
    const sleep = options.sleep;
    const rate = sleep ? (turn.tokensPerSecond ?? options.tokensPerSecond) : undefined;
    while (true) {
      const upcoming = events.peek();
      if (rate !== undefined && sleep && upcoming && "delta" in upcoming) {
        await sleep((Math.ceil(upcoming.delta.length / 4) / rate) * 1000, signal);
      }
      const next = await events.next();
      if (next.done) return;
      yield next.value;
    }
  }
}

/** Every event of one response, in order. */
function scriptEvents(
  turn: ScriptTurn,
  message: AssistantMessage,
  context: LlmContext,
  chunkChars: number | undefined,
): AssistantStreamEvent[] {
  const blocks: ScriptBlock[] =
    turn.text === undefined ? turn.content : [...turn.content, { type: "text", text: turn.text }];
  const events: AssistantStreamEvent[] = [{ type: "start", partial: { ...message, content: [] } }];
  for (let contentIndex = 0; contentIndex < blocks.length; contentIndex++) {
    const block = blocks[contentIndex] as ScriptBlock;
    if (block.type === "text") {
      events.push({ type: "text_start", contentIndex });
      for (const delta of chunks(block.text, chunkChars)) events.push({ type: "text_delta", contentIndex, delta });
      events.push({ type: "text_end", contentIndex, content: block.text });
    } else if (block.type === "thinking") {
      events.push({ type: "thinking_start", contentIndex });
      for (const delta of chunks(block.thinking, chunkChars))
        events.push({ type: "thinking_delta", contentIndex, delta });
      events.push({
        type: "thinking_end",
        contentIndex,
        content: block.thinking,
        ...(block.thinkingSignature !== undefined ? { thinkingSignature: block.thinkingSignature } : {}),
      });
    } else {
      events.push({ type: "toolcall_start", contentIndex, id: block.id, name: block.name });
      for (const delta of chunks(JSON.stringify(block.arguments), chunkChars))
        events.push({ type: "toolcall_delta", contentIndex, delta });
      events.push({ type: "toolcall_end", contentIndex, toolCall: block });
    }
  }
  const final: AssistantMessage = {
    ...message,
    content: blocks.slice(),
    usage: turn.usage ?? estimateUsage(context, blocks),
  };
  const stopReason = final.stopReason;
  if (stopReason === "error" || stopReason === "aborted") {
    const errorMessage =
      stopReason === "aborted" ? ABORTED_ERROR_MESSAGE : (turn.errorMessage ?? turn.error ?? "error");
    events.push({ type: "error", reason: stopReason, error: { ...final, errorMessage } });
  } else {
    events.push({ type: "done", reason: stopReason, message: final });
  }
  return events;
}

/**
 * One response's events, iterable (each iteration from the start). Literals, not classes or closures
 * per call (one fixed hidden class each, which outlives every stream), driven by the functions below.
 */
interface ScriptedStream extends AsyncIterable<AssistantStreamEvent> {
  readonly events: AssistantStreamEvent[];
  readonly message: AssistantMessage;
  readonly signal: AbortSignal | undefined;
  readonly now: () => number;
  [Symbol.asyncIterator](): EventsIterator;
}

function scriptedStream(
  events: AssistantStreamEvent[],
  message: AssistantMessage,
  signal: AbortSignal | undefined,
  now: () => number,
): ScriptedStream {
  return { events, message, signal, now, [Symbol.asyncIterator]: iterateStream };
}

function iterateStream(this: ScriptedStream): EventsIterator {
  return { stream: this, index: 0, finished: false, content: [], next: nextEvent, return: endEvents, peek: peekEvent };
}

/**
 * Hands out precomputed events; checks the signal before each one and, once aborted, ends with
 * `error {reason: "aborted"}` holding the content handed out so far.
 */
interface EventsIterator extends AsyncIterator<AssistantStreamEvent> {
  readonly stream: ScriptedStream;
  index: number;
  finished: boolean;
  readonly content: AssistantMessage["content"];
  /** The event `next()` would hand out (ignoring an abort). */
  peek(): AssistantStreamEvent | undefined;
}

function peekEvent(this: EventsIterator): AssistantStreamEvent | undefined {
  return this.finished ? undefined : this.stream.events[this.index];
}

function nextEvent(this: EventsIterator): Promise<IteratorResult<AssistantStreamEvent>> {
  const stream = this.stream;
  if (this.finished || this.index >= stream.events.length) return Promise.resolve({ value: undefined, done: true });
  if (stream.signal?.aborted) {
    this.finished = true;
    for (let i = 0; i < this.index; i++) trackEvent(this.content, stream.events[i] as AssistantStreamEvent);
    const error = {
      ...stream.message,
      content: this.content.slice(),
      stopReason: "aborted" as const,
      errorMessage: ABORTED_ERROR_MESSAGE,
      timestamp: stream.now(),
    };
    return Promise.resolve({ value: { type: "error", reason: "aborted", error }, done: false });
  }
  return Promise.resolve({ value: stream.events[this.index++] as AssistantStreamEvent, done: false });
}

function endEvents(this: EventsIterator): Promise<IteratorResult<AssistantStreamEvent>> {
  this.finished = true;
  return Promise.resolve({ value: undefined, done: true });
}

/** Rebuilds the content handed out so far (only needed when aborted). */
function trackEvent(content: AssistantMessage["content"], event: AssistantStreamEvent): void {
  switch (event.type) {
    case "text_start":
      content.push({ type: "text", text: "" });
      break;
    case "thinking_start":
      content.push({ type: "thinking", thinking: "" });
      break;
    case "toolcall_start":
      content.push({ type: "toolCall", id: event.id, name: event.name, arguments: {} });
      break;
    case "text_delta": {
      const block = content[event.contentIndex];
      if (block?.type === "text") content[event.contentIndex] = { ...block, text: block.text + event.delta };
      break;
    }
    case "thinking_delta": {
      const block = content[event.contentIndex];
      if (block?.type === "thinking")
        content[event.contentIndex] = { ...block, thinking: block.thinking + event.delta };
      break;
    }
    case "text_end":
      content[event.contentIndex] = { type: "text", text: event.content };
      break;
    case "thinking_end":
      content[event.contentIndex] = {
        type: "thinking",
        thinking: event.content,
        ...(event.thinkingSignature !== undefined ? { thinkingSignature: event.thinkingSignature } : {}),
      };
      break;
    case "toolcall_end":
      content[event.contentIndex] = event.toolCall;
      break;
  }
}

/** Script steps are immutable: each step object is validated once. */
const parsedTurns = new WeakMap<object, ScriptTurn>();
function parseTurn(step: ScriptTurnInput): ScriptTurn {
  let turn = parsedTurns.get(step);
  if (!turn) {
    turn = ScriptTurn.parse(step);
    parsedTurns.set(step, turn);
  }
  return turn;
}

function stopReasonOf(turn: ScriptTurn): StopReason {
  if (turn.stopReason) return turn.stopReason;
  if (turn.error !== undefined) return "error";
  return turn.content.some((b) => b.type === "toolCall") ? "toolUse" : "stop";
}

function base(
  api: string,
  model: string,
  timestamp: number,
  stopReason: StopReason,
  usage: Usage | undefined,
): AssistantMessage {
  return {
    role: "assistant",
    content: [],
    api,
    provider: "scripted",
    model,
    usage: usage ?? emptyUsage(),
    stopReason,
    timestamp,
  };
}

function chunks(text: string, size: number | undefined): string[] {
  if (size === undefined || text.length <= size) return [text];
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

const estimate = (chars: number) => Math.ceil(chars / 4);

function estimateUsage(context: LlmContext, blocks: readonly ScriptBlock[]): Usage {
  let inputChars = context.systemPrompt.length;
  for (const m of context.messages) {
    if (typeof m.content === "string") inputChars += m.content.length;
    else
      for (const b of m.content)
        inputChars += b.type === "text" ? b.text.length : b.type === "thinking" ? b.thinking.length : 0;
  }
  let outputChars = 0;
  for (const b of blocks)
    outputChars +=
      b.type === "text"
        ? b.text.length
        : b.type === "thinking"
          ? b.thinking.length
          : JSON.stringify(b.arguments).length;
  const usage = emptyUsage();
  usage.input = estimate(inputChars);
  usage.output = estimate(outputChars);
  usage.totalTokens = usage.input + usage.output;
  return usage;
}
