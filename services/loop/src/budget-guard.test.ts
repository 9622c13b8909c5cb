// The streaming budget guard around a scripted provider: where it cuts, what the cut message holds.

import { getEventListeners } from "node:events";
import {
  type AssistantStreamEvent,
  addSpend,
  type BudgetLimits,
  budgetViolation,
  emptySpend,
  type Spend,
} from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { guardBudget } from "./budget-guard.js";
import { createScriptedProvider } from "./engine/scripted-provider.js";
import type { LlmContext, StreamOptions } from "./engine/types.js";
import { computeCost, getModelInfo } from "./providers/index.js";

const CONTEXT: LlmContext = {
  systemPrompt: "s".repeat(40),
  messages: [{ role: "user", content: "u".repeat(40), timestamp: 1 }],
  tools: [],
};
const OPTIONS: StreamOptions = { model: { provider: "scripted", modelId: "claude-sonnet-5" }, thinkingLevel: "off" };

async function run(
  limits: BudgetLimits,
  spent: Spend = emptySpend(),
  text = "abcd".repeat(100),
  limited?: (checks: number) => boolean,
) {
  const provider = createScriptedProvider({ steps: [{ text }], now: () => 5, chunkChars: 4 });
  let providerSignal: AbortSignal | undefined;
  const stops: string[] = [];
  let checks = 0;
  let deltas = 0;
  const streamFn = guardBudget(
    (context, options, signal) => {
      providerSignal = signal;
      return provider.streamFn(context, options, signal);
    },
    {
      check: (call) => {
        checks++;
        return budgetViolation("session", limits, addSpend(spent, call));
      },
      ...(limited ? { limited: () => limited(deltas) } : {}),
      onExceeded: (v, when) => stops.push(`${v.limit}@${when}`),
    },
    () => 7,
  );
  const events: AssistantStreamEvent[] = [];
  for await (const event of streamFn(CONTEXT, OPTIONS, undefined)) {
    events.push(event);
    if (event.type === "text_delta") deltas++;
  }
  return { events, stops, providerSignal, calls: provider.requests.length, checks };
}

describe("loop / budget guard", () => {
  it("cuts the stream once the estimated cost reaches the limit, and aborts the provider's request", async () => {
    const price = getModelInfo("claude-sonnet-5").price;
    // input: chars/4 of the user text and the system prompt (10 + 10); each 4-char delta is 1 output token
    const costAt = (output: number) => computeCost(price, { input: 20, output, cacheRead: 0, cacheWrite: 0 }).total;
    const limit = costAt(25);
    const { events, stops, providerSignal } = await run({ costUsd: limit });
    const last = events.at(-1);
    expect(last?.type).toBe("error");
    if (last?.type !== "error") return;
    expect(events.filter((e) => e.type === "text_delta")).toHaveLength(25);
    expect(last.error.content).toEqual([{ type: "text", text: "abcd".repeat(25) }]);
    expect(last.error).toMatchObject({
      stopReason: "error",
      errorReason: "budget_exceeded",
      errorMessage: `Budget exceeded: session cost $${limit.toFixed(4)}/$${limit.toFixed(4)}`,
      usage: { input: 20, output: 25, totalTokens: 45 },
    });
    expect(last.error.usage.cost.total).toBeCloseTo(limit, 12);
    expect(stops).toEqual(["costUsd@stream"]);
    expect(providerSignal?.aborted).toBe(true);
  });

  it("lets a call under every limit through unchanged", async () => {
    const { events, stops, providerSignal } = await run({ outputTokens: 1000, costUsd: 1 });
    expect(events.at(-1)?.type).toBe("done");
    expect(events.filter((e) => e.type === "text_delta")).toHaveLength(100);
    expect(stops).toEqual([]);
    expect(providerSignal?.aborted).toBe(false);
  });

  it("ends a call that would start over a limit without calling the provider", async () => {
    const spent = { inputTokens: 0, outputTokens: 0, totalTokens: 990, costUsd: 0 };
    const { events, stops, calls } = await run({ totalTokens: 1000 }, spent);
    expect(calls).toBe(0);
    expect(stops).toEqual(["totalTokens@start"]);
    expect(events).toHaveLength(1);
    const only = events[0];
    expect(only?.type === "error" && [only.error.errorMessage, only.error.content]).toEqual([
      "Budget exceeded: session total tokens 1010/1000",
      [],
    ]);
  });

  it("skips the estimate while no budget applies, and cuts once one does", async () => {
    const free = await run({ outputTokens: 10 }, emptySpend(), "abcd".repeat(100), () => false);
    // Only the check before the provider is called runs; the stream passes through whole.
    expect([free.checks, free.events.at(-1)?.type, free.stops]).toEqual([1, "done", []]);

    // A limit that applies from the 40th delta on (a tenant's limits set while the message streams).
    const late = await run({ outputTokens: 10 }, emptySpend(), "abcd".repeat(100), (deltas) => deltas >= 40);
    const last = late.events.at(-1);
    expect(last?.type).toBe("error");
    if (last?.type !== "error") return;
    expect(late.events.filter((e) => e.type === "text_delta")).toHaveLength(40);
    expect(last.error.content).toEqual([{ type: "text", text: "abcd".repeat(40) }]);
    expect(last.error.usage.output).toBe(40);
    expect(late.stops).toEqual(["outputTokens@stream"]);
  });

  it("a budget that applies only after hundreds of deltas still ends the call with every delta streamed", async () => {
    // The guard applies the deltas to its copy of the message only when a budget applies, or in
    // batches: 300 deltas cross a batch's end before the limit applies.
    const late = await run({ outputTokens: 10 }, emptySpend(), "abcd".repeat(400), (deltas) => deltas >= 300);
    const last = late.events.at(-1);
    expect(last?.type).toBe("error");
    if (last?.type !== "error") return;
    expect(last.error.content).toEqual([{ type: "text", text: "abcd".repeat(300) }]);
    expect(last.error.usage.output).toBe(300);
  });

  it("lets go of the caller's signal once the call ends, read to its end or not", async () => {
    const provider = createScriptedProvider({ steps: [{ text: "abcd" }, { text: "efgh".repeat(50) }], now: () => 5 });
    let stoppedEarly = false;
    const streamFn = guardBudget(
      (context, options, signal) => {
        const inner = provider.streamFn(context, options, signal)[Symbol.asyncIterator]();
        return {
          [Symbol.asyncIterator]: () => ({
            next: () => inner.next(),
            return: (value?: unknown) => {
              stoppedEarly = true;
              return inner.return?.(value) ?? Promise.resolve({ done: true as const, value });
            },
          }),
        };
      },
      { check: () => undefined },
      () => 7,
    );
    const caller = new AbortController();
    // Read up to its terminal event only, as the engine reads.
    const whole = streamFn(CONTEXT, OPTIONS, caller.signal)[Symbol.asyncIterator]();
    let event = await whole.next();
    expect(getEventListeners(caller.signal, "abort")).toHaveLength(1);
    while (!event.done && event.value.type !== "done") event = await whole.next();
    expect(getEventListeners(caller.signal, "abort")).toHaveLength(0);
    expect(await whole.next()).toEqual({ done: true, value: undefined });
    // Left after its first event: the provider is asked to stop.
    const left = streamFn(CONTEXT, OPTIONS, caller.signal)[Symbol.asyncIterator]();
    await left.next();
    await left.return?.();
    await new Promise((r) => setTimeout(r, 0));
    expect([stoppedEarly, getEventListeners(caller.signal, "abort").length]).toEqual([true, 0]);
  });
});
