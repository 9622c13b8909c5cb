import { setTimeout as sleep } from "node:timers/promises";
import { STREAMS } from "@fleet/protocol";
import type { Consumer, ConsumerMessages, JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "pino";
import type { AnyToolDefinition } from "../define-tool.js";
import type { RunnerMetrics } from "./runner-metrics.js";

/**
 * Pulls calls from each tool's durable consumer `tool-<name>` on FLEET_TOOL_CALLS: at most
 * `concurrency` deliveries of one tool are handled at once, with one outstanding fetch for the free
 * slots. Once stopping, messages still arriving are handed back (nak). An unavailable consumer (NATS
 * restarting) or a failed pull is retried every 500 ms until stopped.
 */
export interface CallConsumer {
  /** Starts one pull loop per tool; `onDelivery` must settle when the delivery is done with. */
  start(onDelivery: (m: JsMsg, tool: AnyToolDefinition) => Promise<void>): void;
  /** Stops pulling and resolves when every pull loop ended (handlers may still run). */
  stop(): Promise<void>;
  /**
   * Serves `tool` from now on (after `start`): a new pull loop, or, for a tool already served, its
   * new definition for the calls pulled from now on.
   */
  add(tool: AnyToolDefinition): void;
  /** Stops pulling a tool's calls (calls already pulled run on). */
  remove(name: string): void;
}

/** Delay of the nak of a call delivered to a removed tool's last pull. */
const REMOVED_TOOL_NAK_MS = 250;

export function createCallConsumer(opts: {
  js: JetStreamClient;
  tools: readonly AnyToolDefinition[];
  concurrency: number;
  metrics: RunnerMetrics;
  logger: Pick<Logger, "warn" | "error">;
}): CallConsumer {
  const fetches = new Map<ConsumerMessages, string>();
  const pumps: Promise<void>[] = [];
  const current = new Map(opts.tools.map((t) => [t.name, t]));
  const removed = new Set<string>();
  /** Tools with a pull loop running (one per tool at most). */
  const pumping = new Set<string>();
  let handler: ((m: JsMsg, tool: AnyToolDefinition) => Promise<void>) | undefined;
  const slotWaiters = new Map<string, Array<() => void>>();
  const activeByTool = new Map<string, number>();
  let stopping = false;

  const active = (tool: string) => activeByTool.get(tool) ?? 0;
  const freeSlot = (tool: string) => slotWaiters.get(tool)?.shift()?.();
  const waitForSlot = (tool: string) =>
    new Promise<void>((resolve) => {
      const list = slotWaiters.get(tool) ?? [];
      list.push(resolve);
      slotWaiters.set(tool, list);
    });

  async function pump(name: string, onDelivery: (m: JsMsg, tool: AnyToolDefinition) => Promise<void>) {
    const live = () => !stopping && !removed.has(name);
    pumping.add(name);
    try {
      await pullLoop(name, live, onDelivery);
    } finally {
      pumping.delete(name);
    }
  }

  async function pullLoop(
    name: string,
    live: () => boolean,
    onDelivery: (m: JsMsg, tool: AnyToolDefinition) => Promise<void>,
  ) {
    let consumer: Consumer | undefined;
    while (live()) {
      const tool = current.get(name);
      if (!tool) break;
      if (!consumer) {
        try {
          consumer = await opts.js.consumers.get(STREAMS.toolCalls.name, `tool-${tool.name}`);
        } catch (err) {
          // NATS is restarting or paused: keep trying; a runner never exits over an outage.
          opts.logger.warn(
            { evt: "consumer_unavailable", tool: tool.name, err },
            "tool call consumer unavailable; retrying",
          );
          await sleep(500);
          continue;
        }
      }
      const free = opts.concurrency - active(tool.name);
      if (free <= 0) {
        await waitForSlot(tool.name);
        continue;
      }
      let batch: ConsumerMessages | undefined;
      try {
        batch = await consumer.fetch({ max_messages: free, expires: 5_000 });
        fetches.set(batch, tool.name);
        if (!live()) batch.stop();
        for await (const m of batch) {
          if (!live()) {
            // A removed tool's pull stays on the server until it expires (2.9 cannot cancel one): its
            // deliveries are handed back, a little later so the same pull is not handed them at once.
            m.nak(stopping ? undefined : REMOVED_TOOL_NAK_MS);
            continue;
          }
          activeByTool.set(tool.name, active(tool.name) + 1);
          opts.metrics.active(tool.name, 1);
          void onDelivery(m, current.get(name) ?? tool)
            .catch((err) =>
              // Unacked: the consumer redelivers it after ack_wait.
              opts.logger.error({ evt: "tool_delivery_failed", tool: tool.name, err }, "tool call delivery failed"),
            )
            .finally(() => {
              activeByTool.set(tool.name, active(tool.name) - 1);
              opts.metrics.active(tool.name, -1);
              freeSlot(tool.name);
            });
        }
      } catch (err) {
        if (!live()) break;
        opts.logger.warn({ evt: "fetch_failed", tool: tool.name, err }, "pulling tool calls failed; retrying");
        await sleep(500);
      } finally {
        if (batch) fetches.delete(batch);
      }
    }
  }

  return {
    start(onDelivery) {
      handler = onDelivery;
      for (const tool of opts.tools) pumps.push(pump(tool.name, onDelivery));
    },
    add(tool) {
      current.set(tool.name, tool);
      removed.delete(tool.name);
      if (!pumping.has(tool.name) && handler && !stopping) pumps.push(pump(tool.name, handler));
    },
    remove(name) {
      removed.add(name);
      // Its outstanding pull is read until it expires, not stopped: a call the server delivers to it
      // meanwhile is handed back (nak) instead of waiting out ack_wait in an inbox no one reads.
      for (const wake of slotWaiters.get(name)?.splice(0) ?? []) wake();
    },
    async stop() {
      stopping = true;
      for (const batch of fetches.keys()) batch.stop();
      for (const [tool, waiters] of slotWaiters) {
        for (const wake of waiters.splice(0)) wake();
        slotWaiters.delete(tool);
      }
      await Promise.allSettled(pumps);
    },
  };
}
