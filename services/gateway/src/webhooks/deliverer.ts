// Delivers one webhook: pulls its durable consumer, POSTs matching events, acks on 2xx, retries later.
import { decodeEvent, STREAMS } from "@fleet/protocol";
import { sleep } from "@fleet/runtime";
import type { ConsumerMessages, JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "pino";
import type { GatewayMetrics } from "../metrics.js";
import { IDEMPOTENCY_HEADER, retryDelayMs, SIGNATURE_HEADER, signBody } from "./signature.js";
import type { WebhookRecord } from "./webhook-record.js";
import { durableOf } from "./webhook-store.js";

export interface DelivererOptions {
  js: JetStreamClient;
  webhook: WebhookRecord;
  backoffMs: number;
  backoffMaxMs: number;
  timeoutMs: number;
  logger: Logger;
  metrics: GatewayMetrics;
}

export interface Deliverer {
  stop(): Promise<void>;
}

/**
 * Contract: at least once. A message is acked only after the receiver answered 2xx (or when its
 * event type is not subscribed); any other answer, a network error or a timeout naks it with
 * exponential backoff, and the consumer (one message in flight) redelivers it before anything later.
 * Events of other types are acked without a request.
 */
export function startDeliverer(opts: DelivererOptions): Deliverer {
  const { webhook, logger } = opts;
  const log = logger.child({ webhookId: webhook.id });
  const wanted = new Set<string>(webhook.events);
  const abort = new AbortController();
  let messages: ConsumerMessages | undefined;

  const deliver = async (m: JsMsg): Promise<void> => {
    const decoded = decodeEvent(m.data);
    if (!decoded.ok || !wanted.has(decoded.value.type)) {
      m.ack();
      return;
    }
    const event = decoded.value;
    const body = JSON.stringify({ webhookId: webhook.id, sessionId: event.meta.sessionId, seq: m.seq, event });
    const attempt = m.info.deliveryCount;
    let outcome: string;
    try {
      const response = await fetch(webhook.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "fleet-gateway",
          [SIGNATURE_HEADER]: signBody(webhook.secret, body),
          [IDEMPOTENCY_HEADER]: String(m.seq),
          "fleet-event-type": event.type,
          "fleet-webhook-id": webhook.id,
        },
        body,
        signal: AbortSignal.any([abort.signal, AbortSignal.timeout(opts.timeoutMs)]),
      });
      await response.arrayBuffer().catch(() => undefined);
      outcome = response.ok ? "ok" : `http ${response.status}`;
    } catch (err) {
      outcome = (err as Error).name === "TimeoutError" ? "timeout" : `error ${(err as Error).message}`;
    }
    if (abort.signal.aborted && outcome !== "ok") return; // stopping: leave it for the next deliverer
    if (outcome === "ok") {
      m.ack();
      opts.metrics.webhookDeliveries.inc({ outcome: "ok" });
      log.debug({ evt: "gateway_webhook_delivered", seq: m.seq, type: event.type, attempt }, "webhook delivered");
      return;
    }
    const delay = retryDelayMs(attempt, opts.backoffMs, opts.backoffMaxMs);
    m.nak(delay);
    opts.metrics.webhookDeliveries.inc({ outcome: "retry" });
    log.warn(
      { evt: "gateway_webhook_failed", seq: m.seq, type: event.type, attempt, outcome, retryInMs: delay },
      "webhook delivery failed; retrying",
    );
  };

  const run = async () => {
    for (let failures = 0; !abort.signal.aborted; ) {
      try {
        const consumer = await opts.js.consumers.get(STREAMS.events.name, durableOf(webhook.id));
        messages = await consumer.consume({ max_messages: 1, expires: 10_000 });
        if (abort.signal.aborted) break;
        for await (const m of messages) {
          failures = 0;
          await deliver(m);
          if (abort.signal.aborted) break;
        }
      } catch (err) {
        if (abort.signal.aborted) break;
        failures++;
        log.warn({ evt: "gateway_webhook_consumer_failed", err, failures }, "webhook consumer failed; retrying");
        await sleep(Math.min(10_000, 200 * 2 ** Math.min(failures, 6)), abort.signal);
      } finally {
        await messages?.close().catch(() => undefined);
        messages = undefined;
      }
    }
  };
  const running = run();

  return {
    async stop() {
      abort.abort();
      await messages?.close().catch(() => undefined);
      await running;
    },
  };
}
