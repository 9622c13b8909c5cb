// A StreamFn wrapper that enforces budgets while an assistant message streams.
import {
  type AssistantMessage,
  type AssistantStreamEvent,
  BUDGET_EXCEEDED,
  type BudgetViolation,
  budgetExceededMessage,
  emptySpend,
  estimateContextTokens,
  type ModelRef,
  type Spend,
  type StreamDelta,
  spendOfUsage,
  type Usage,
} from "@fleet/protocol";
import { finishedContent, syntheticAssistant } from "./engine/messages.js";
import { applyDeltaInPlace } from "./engine/stream-assistant.js";
import type { StreamFn, StreamOptions } from "./engine/types.js";
import { computeCost, getModelInfo, type ModelPrice } from "./providers/index.js";

/** When the guard stopped a call: before calling the provider, or while the message streamed. */
export type BudgetStop = "start" | "stream";

export interface BudgetGuard {
  /**
   * The first budget reached once `call` (what this call has spent so far, estimated) is added to
   * what the log already shows as spent; `undefined` when none is. Called before the provider is
   * called (with nothing spent), at its `start` and after every content delta.
   */
  check(call: Spend): BudgetViolation | undefined;
  /**
   * Whether any budget applies now; `false` means `check` cannot find one reached, so the guard
   * skips the estimate for that delta. Without it every delta is checked.
   */
  limited?(): boolean;
  onExceeded?(violation: BudgetViolation, when: BudgetStop): void;
}

/**
 * `streamFn` under a budget. Output tokens are estimated as pi estimates them (chars/4 of the
 * streamed text, thinking and tool-call JSON); input tokens are the provider's count when its
 * `start` carries one, else pi's estimate of the request (the context's last usage plus chars/4 of
 * the rest, plus the system prompt); cost is priced at `priceOf` the call's model (default Fleet's Anthropic table). The exact usage of a message that ends
 * normally is the provider's, and the log's fold counts that one.
 *
 * When a budget is reached the provider's stream is aborted and the call ends with a terminal
 * `error` event: the content streamed so far, the estimated usage, stopReason `error`,
 * `errorReason: "budget_exceeded"` and `errorMessage` `Budget exceeded: <scope> <limit> <spent>/<max>`.
 * A budget already reached before the call ends it the same way without calling the provider.
 * Contract: never throws (the provider's own contract aside).
 */
export function guardBudget(
  streamFn: StreamFn,
  guard: BudgetGuard,
  now: () => number,
  priceOf: (model: ModelRef) => ModelPrice = (model) => getModelInfo(model.modelId).price,
): StreamFn {
  return (context, options, signal) => ({
    [Symbol.asyncIterator]: () => guardedStream({ streamFn, context, options, signal, guard, now, priceOf }),
  });
}

interface GuardedCall {
  streamFn: StreamFn;
  context: Parameters<StreamFn>[0];
  options: StreamOptions;
  signal: AbortSignal | undefined;
  guard: BudgetGuard;
  now: () => number;
  priceOf: (model: ModelRef) => ModelPrice;
}

const END: IteratorReturnResult<undefined> = { done: true, value: undefined };
/** Content events a guarded call holds back from its copy of the message at most. */
const MAX_UNAPPLIED = 256;

/**
 * One guarded call as a plain iterator over the provider's: each event costs the provider's own
 * promise and nothing more. The estimate after a content event is checked when the next event is
 * asked for (before the provider is read again). Once the call ended (a terminal event, the
 * provider's end, a stop, or `return()`), the abort listener is removed and every later `next()`
 * is the end.
 */
function guardedStream(call: GuardedCall): AsyncIterator<AssistantStreamEvent> {
  const { guard, signal } = call;
  const abort = new AbortController();
  const forward = () => abort.abort(signal?.reason);
  let iterator: AsyncIterator<AssistantStreamEvent> | undefined;
  let inputEstimate = 0;
  let price: ModelPrice | undefined;
  let partial: AssistantMessage | undefined;
  /**
   * Content events not applied to `partial` yet: they are applied only when a budget applies (the
   * estimate needs nothing but their characters), or once there are MAX_UNAPPLIED of them.
   */
  const unapplied: StreamDelta[] = [];
  let outputChars = 0;
  let checkDue = false;
  let ended = false;

  /** Ends the call: the listener goes, and the provider is asked to stop unless it ended itself. */
  const end = (stopProvider: boolean) => {
    if (ended) return;
    ended = true;
    signal?.removeEventListener("abort", forward);
    const it = iterator;
    if (stopProvider && it) {
      void Promise.resolve()
        .then(() => it.return?.())
        .catch(() => undefined);
    }
  };
  const last = (event: AssistantStreamEvent): IteratorResult<AssistantStreamEvent> => {
    end(false);
    return { done: false, value: event };
  };
  const onNext = (next: IteratorResult<AssistantStreamEvent>): IteratorResult<AssistantStreamEvent> => {
    if (ended) return END;
    if (next.done) {
      end(true);
      return END;
    }
    const event = next.value;
    if (event.type === "done" || event.type === "error") return last(event);
    // The guard's own copy of the message so far: its content array is updated in place, when needed.
    if (event.type === "start") partial = { ...event.partial, content: event.partial.content.slice() };
    else if (partial) {
      if (unapplied.push(event) >= MAX_UNAPPLIED) applyUnapplied(partial);
      outputChars += deltaChars(event);
    }
    checkDue = partial !== undefined;
    return next;
  };
  /** The stop once a budget is reached: the provider aborted, the call ended with what streamed. */
  const overBudget = (): AssistantStreamEvent | undefined => {
    if (!partial || !price || guard.limited?.() === false) return undefined;
    applyUnapplied(partial);
    const usage = estimatedUsage(partial.usage, inputEstimate, outputChars, price);
    const over = guard.check(spendOfUsage(usage));
    if (!over) return undefined;
    abort.abort();
    guard.onExceeded?.(over, "stream");
    return stopped({ ...partial, content: finishedContent(partial.content), usage }, over);
  };
  const applyUnapplied = (message: AssistantMessage) => {
    for (const event of unapplied) applyDeltaInPlace(message.content, event);
    unapplied.length = 0;
  };
  const start = (): AssistantStreamEvent | undefined => {
    const { context, options } = call;
    inputEstimate = estimateContextTokens(context.messages).tokens + Math.ceil(context.systemPrompt.length / 4);
    const before = guard.check({ ...emptySpend(), inputTokens: inputEstimate, totalTokens: inputEstimate });
    if (before) {
      guard.onExceeded?.(before, "start");
      return stopped(syntheticAssistant(options.model, "error", "", call.now()), before);
    }
    price = call.priceOf(options.model);
    if (signal?.aborted) forward();
    else signal?.addEventListener("abort", forward, { once: true });
    iterator = call.streamFn(context, options, abort.signal)[Symbol.asyncIterator]();
    return undefined;
  };

  return {
    next() {
      if (ended) return Promise.resolve(END);
      if (!iterator) {
        const refused = start();
        if (refused) return Promise.resolve(last(refused));
      } else if (checkDue) {
        checkDue = false;
        const stop = overBudget();
        if (stop) {
          end(true);
          return Promise.resolve({ done: false, value: stop });
        }
      }
      return (iterator as AsyncIterator<AssistantStreamEvent>).next().then(onNext);
    },
    return(value?: unknown) {
      end(true);
      return Promise.resolve({ done: true as const, value });
    },
    throw(err?: unknown) {
      end(true);
      return Promise.reject(err);
    },
  };
}

/** The terminal event of a call a budget stopped. */
function stopped(message: AssistantMessage, violation: BudgetViolation): AssistantStreamEvent {
  return {
    type: "error",
    reason: "error",
    error: {
      ...message,
      stopReason: "error",
      errorMessage: budgetExceededMessage(violation),
      errorReason: BUDGET_EXCEEDED,
    },
  };
}

/** Characters of generated content a delta adds (pi's chars/4 estimate counts these). */
function deltaChars(event: AssistantStreamEvent): number {
  switch (event.type) {
    case "text_delta":
    case "thinking_delta":
    case "toolcall_delta":
      return event.delta.length;
    default:
      return 0;
  }
}

/**
 * The provider's usage so far, with input estimated when the provider has not counted it yet and
 * output at least chars/4 of what streamed, priced again.
 */
function estimatedUsage(
  usage: Usage,
  inputEstimate: number,
  outputChars: number,
  price: Parameters<typeof computeCost>[0],
): Usage {
  const counted = usage.input + usage.cacheRead + usage.cacheWrite > 0;
  const input = counted ? usage.input : inputEstimate;
  const output = Math.max(usage.output, Math.ceil(outputChars / 4));
  const counts = { input, output, cacheRead: usage.cacheRead, cacheWrite: usage.cacheWrite };
  return {
    ...counts,
    totalTokens: input + output + usage.cacheRead + usage.cacheWrite,
    cost: computeCost(price, counts),
  };
}
