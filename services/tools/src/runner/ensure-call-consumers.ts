import { STREAMS, toolCallConsumer } from "@fleet/protocol";
import { ensureConsumer } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { Logger } from "pino";
import type { AnyToolDefinition } from "../define-tool.js";
import { isAckWaitDrift, workingIntervalMs } from "./runner-timing.js";

/**
 * Creates each tool's consumer `tool-<name>` if missing, and gives an existing one this runner's
 * `ackWaitMs` when it has another (an older version's 30 s); other drift is only logged.
 * Resolves how often running calls must be marked in progress, from the consumers' `ack_wait`.
 */
export async function ensureCallConsumers(opts: {
  jsm: JetStreamManager;
  tools: readonly AnyToolDefinition[];
  ackWaitMs: number;
  logger: Pick<Logger, "warn">;
}): Promise<number> {
  const ackWaits: (number | undefined)[] = [];
  for (const tool of opts.tools) {
    const config = toolCallConsumer(tool.name, opts.ackWaitMs);
    const drift = await ensureConsumer(opts.jsm, STREAMS.toolCalls.name, config);
    for (const line of drift) opts.logger.warn({ evt: "consumer_drift", drift: line }, "consumer drift");
    if (isAckWaitDrift(drift)) {
      await opts.jsm.consumers.update(STREAMS.toolCalls.name, config.durable_name, { ack_wait: config.ack_wait });
    }
    const info = await opts.jsm.consumers.info(STREAMS.toolCalls.name, config.durable_name);
    ackWaits.push(info.config.ack_wait);
  }
  return workingIntervalMs(ackWaits);
}
