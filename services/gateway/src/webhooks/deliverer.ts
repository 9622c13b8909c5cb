// Delivers one webhook: pulls its durable consumer on each stream it reads, POSTs matching events to
// allowed addresses, acks on 2xx, retries later, records every attempt, and disables the webhook after
// a run of failures.
import { FleetEvent, parseJson, validate } from "@fleet/protocol";
import { sleep } from "@fleet/runtime";
import type { ConsumerMessages, JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "pino";
import type { GatewayMetrics } from "../metrics.js";
import { type DeliveryPolicy, type PostOutcome, safePost } from "./safe-post.js";
import { IDEMPOTENCY_HEADER, retryDelayMs, SIGNATURE_HEADER, signBody } from "./signature.js";
import { createStatusRecorder } from "./status-recorder.js";
import type { DeliveryAttempt, WebhookRecord } from "./webhook-record.js";
import { durableOf, type WebhookSource, type WebhookStore } from "./webhook-store.js";

export interface DelivererOptions {
  js: JetStreamClient;
  store: WebhookStore;
  webhook: WebhookRecord;
  policy: DeliveryPolicy;
  backoffMs: number;
  backoffMaxMs: number;
  timeoutMs: number;
  /** Failed attempts in a row after which the webhook is disabled (FLEET_GATEWAY_WEBHOOK_MAX_FAILURES). */
  maxFailures: number;
  logger: Logger;
  metrics: GatewayMetrics;
  now?: () => number;
}

export interface Deliverer {
  stop(): Promise<void>;
}

/** While a POST is in flight its message is marked in progress this often (the consumer's ack wait is longer). */
const WORKING_EVERY_MS = 5_000;

/** Does the webhook take events of this type? */
export const wants = (events: readonly string[], type: string): boolean =>
  events.includes("*") || events.includes(type);

const attemptOf = (outcome: PostOutcome): Pick<DeliveryAttempt, "outcome" | "status" | "address" | "detail"> => {
  switch (outcome.kind) {
    case "ok":
      return { outcome: "ok", status: outcome.status, address: outcome.address };
    case "http":
      return { outcome: "http", status: outcome.status, address: outcome.address, detail: outcome.detail };
    case "refused":
      return { outcome: "refused", detail: `refused: ${outcome.reason} (${outcome.urls.at(-1)})` };
    case "timeout":
      return { outcome: "timeout", detail: "no answer in time" };
    case "error":
      return { outcome: "error", detail: outcome.detail };
  }
};

/**
 * Contract: at least once, in stream order (per stream: a webhook for every session on a log of K > 1
 * groups pulls each group's stream on its own, one message in flight on each). A message is acked only after the receiver answered
 * 2xx (or when its event type is not subscribed); any other answer, a refused address, a network
 * error or a timeout naks it with exponential backoff, and the consumer (one message in flight)
 * redelivers it before anything later. Every attempt is recorded in the status: a failure before
 * its nak, successes in batches while deliveries go on (a deliverer that dies loses at most the
 * last batch of its success records, never a delivery); once `maxFailures` attempts in a row
 * failed, the registration is set `disabled` (its undelivered events stay in its consumer) and
 * this deliverer stops.
 */
export function startDeliverer(opts: DelivererOptions): Deliverer {
  const { webhook, logger } = opts;
  const now = opts.now ?? Date.now;
  const log = logger.child({ webhookId: webhook.id });
  const abort = new AbortController();
  const open = new Set<ConsumerMessages>();

  const status = createStatusRecorder(opts.store, webhook.id, log);

  const disable = async (failures: number, detail: string | undefined) => {
    // Another stream's pull may have disabled it already.
    if (abort.signal.aborted) return;
    const reason = `${failures} failed attempts in a row; the last: ${detail ?? "failed"}`;
    try {
      await opts.store.setState(webhook.id, "disabled", reason, now());
    } catch (err) {
      // Still active: the next failure tries again.
      log.warn({ evt: "gateway_webhook_disable_failed", err }, "could not disable a webhook");
      return;
    }
    opts.metrics.webhookDeliveries.inc({ outcome: "disabled" });
    log.warn({ evt: "gateway_webhook_disabled", failures, reason }, "webhook disabled after a run of failures");
    abort.abort();
  };

  const deliver = async (m: JsMsg, source: WebhookSource): Promise<void> => {
    // Most events of a filtered webhook are not wanted: their type is read before any validation.
    const json = parseJson(m.data);
    const value = json.ok ? json.value : undefined;
    const type = (value as { type?: unknown } | null | undefined)?.type;
    const decoded = typeof type === "string" && wants(webhook.events, type) ? validate(FleetEvent, value) : undefined;
    if (!decoded?.ok) {
      m.ack();
      return;
    }
    const event = decoded.value;
    const body = JSON.stringify({ webhookId: webhook.id, sessionId: event.meta.sessionId, seq: m.seq, event });
    const attempt = m.info.deliveryCount;
    const started = now();
    const working = setInterval(() => m.working(), WORKING_EVERY_MS);
    let outcome: PostOutcome;
    try {
      outcome = await safePost({
        url: webhook.url,
        headers: {
          "content-type": "application/json",
          "user-agent": "fleet-gateway",
          [SIGNATURE_HEADER]: signBody(webhook.secret, body),
          [IDEMPOTENCY_HEADER]: `${source.keyPrefix}${m.seq}`,
          "fleet-event-type": event.type,
          "fleet-webhook-id": webhook.id,
        },
        body,
        policy: opts.policy,
        timeoutMs: opts.timeoutMs,
        signal: abort.signal,
      });
    } finally {
      clearInterval(working);
    }
    // Stopping: the message goes back at once, for the next deliverer.
    if (abort.signal.aborted && outcome.kind !== "ok") {
      m.nak();
      return;
    }
    const fields = attemptOf(outcome);
    status.add({
      seq: m.seq,
      sessionId: event.meta.sessionId,
      eventType: event.type,
      attempt,
      at: now(),
      durationMs: Math.max(0, now() - started),
      ...fields,
    });
    opts.metrics.webhookDeliveries.inc({ outcome: fields.outcome });
    if (outcome.kind === "ok") {
      // Successes are written with the next batch; a failure waits for its write (the run of failures).
      m.ack();
      log.debug({ evt: "gateway_webhook_delivered", seq: m.seq, type: event.type, attempt }, "webhook delivered");
      return;
    }
    const failures = await status.flush();
    const delay = retryDelayMs(attempt, opts.backoffMs, opts.backoffMaxMs);
    log.warn(
      { evt: "gateway_webhook_failed", seq: m.seq, type: event.type, attempt, ...fields, retryInMs: delay },
      "webhook delivery failed; retrying",
    );
    if (failures !== undefined && failures >= opts.maxFailures) {
      m.nak();
      await disable(failures, fields.detail ?? (fields.status ? `http ${fields.status}` : fields.outcome));
      return;
    }
    m.nak(delay);
  };

  const run = async (source: WebhookSource) => {
    for (let failures = 0; !abort.signal.aborted; ) {
      let messages: ConsumerMessages | undefined;
      try {
        const consumer = await opts.js.consumers.get(source.stream, durableOf(webhook.id));
        messages = await consumer.consume({ max_messages: 1, expires: 10_000 });
        open.add(messages);
        if (abort.signal.aborted) break;
        for await (const m of messages) {
          failures = 0;
          await deliver(m, source);
          if (abort.signal.aborted) break;
        }
      } catch (err) {
        if (abort.signal.aborted) break;
        failures++;
        log.warn(
          { evt: "gateway_webhook_consumer_failed", err, failures, stream: source.stream },
          "webhook consumer failed; retrying",
        );
        await sleep(Math.min(10_000, 200 * 2 ** Math.min(failures, 6)), abort.signal);
      } finally {
        if (messages) open.delete(messages);
        await messages?.close().catch(() => undefined);
      }
    }
  };
  const running = Promise.all(opts.store.sourcesOf(webhook).map(run));

  return {
    async stop() {
      abort.abort();
      await Promise.all([...open].map((m) => m.close().catch(() => undefined)));
      await running;
      await status.flush();
    },
  };
}
