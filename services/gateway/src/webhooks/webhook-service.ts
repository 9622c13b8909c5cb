// Runs a deliverer for every active registration in KV `fleet_webhooks`, following puts and deletes.
import { type FollowKvOptions, followKv, type KvFollower } from "@fleet/runtime";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { Logger } from "pino";
import type { GatewayMetrics } from "../metrics.js";
import { type Deliverer, startDeliverer } from "./deliverer.js";
import type { DeliveryPolicy } from "./safe-post.js";
import { decodeWebhook, REGISTRATION_KEYS, type WebhookStore } from "./webhook-store.js";

export interface WebhookService {
  /** Resolves once every registration that existed at start has its deliverer. */
  ready: Promise<void>;
  running(): number;
  stop(): Promise<void>;
}

export function startWebhookService(opts: {
  store: WebhookStore;
  js: JetStreamClient;
  /** How the registrations are followed (see followKv: a new watch after each reconnect). */
  follow?: FollowKvOptions;
  policy: DeliveryPolicy;
  backoffMs: number;
  backoffMaxMs: number;
  timeoutMs: number;
  maxFailures: number;
  logger: Logger;
  metrics: GatewayMetrics;
}): WebhookService {
  const deliverers = new Map<string, Deliverer>();
  const stopOne = (key: string) => {
    const deliverer = deliverers.get(key);
    deliverers.delete(key);
    void deliverer?.stop();
  };
  const follower: KvFollower = followKv(
    opts.store.kv,
    REGISTRATION_KEYS,
    (key, operation, value) => {
      if (operation !== "PUT") return stopOne(key);
      const webhook = decodeWebhook(value);
      if (!webhook) {
        opts.logger.warn({ evt: "gateway_webhook_invalid", key }, "ignored an invalid webhook registration");
        return;
      }
      if (webhook.state === "disabled") return stopOne(key);
      if (deliverers.has(key)) return;
      deliverers.set(key, startDeliverer({ ...opts, webhook }));
    },
    opts.follow,
  );
  return {
    ready: follower.ready,
    running: () => deliverers.size,
    async stop() {
      follower.stop();
      await Promise.all([...deliverers.values()].map((d) => d.stop()));
      deliverers.clear();
    },
  };
}
