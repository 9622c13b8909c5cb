// Webhook registrations in KV `fleet_webhooks`, each with its durable consumer on FLEET_EVENTS.
import { randomBytes } from "node:crypto";
import { KV_BUCKETS, partitionOf, STREAMS, subjects, webhookConsumer } from "@fleet/protocol";
import { readKvEntries } from "@fleet/runtime";
import type { ConsumerConfig, JetStreamManager } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { z } from "zod";
import { type RegisterWebhookBody, WebhookRecord } from "./webhook-record.js";

export interface WebhookStore {
  readonly kv: KV;
  /** Creates the consumer, then the registration (so a deliverer that sees it finds its consumer). */
  register(tenant: string, body: z.infer<typeof RegisterWebhookBody>, now: number): Promise<WebhookRecord>;
  /** Every registration of a tenant, oldest first. */
  list(tenant: string): Promise<WebhookRecord[]>;
  get(id: string): Promise<WebhookRecord | undefined>;
  /** Removes the registration, then its consumer (with what it had not delivered). */
  remove(id: string): Promise<void>;
}

export const durableOf = (webhookId: string) => webhookConsumer(webhookId, "", 1).durable_name;

/** Decodes a stored registration; undefined for a value that is not one. */
export function decodeWebhook(value: Uint8Array): WebhookRecord | undefined {
  try {
    const parsed = WebhookRecord.safeParse(JSON.parse(new TextDecoder().decode(value)));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export async function openWebhookStore(
  nc: NatsConnection,
  jsm: JetStreamManager,
  partitions: number,
  replicas = 1,
): Promise<WebhookStore> {
  const kv = await new Kvm(nc).create(KV_BUCKETS.webhooks.name, { history: KV_BUCKETS.webhooks.history, replicas });
  const get = async (id: string) => {
    const entry = await kv.get(id);
    return entry?.operation === "PUT" ? decodeWebhook(entry.value) : undefined;
  };
  return {
    kv,
    async register(tenant, body, now) {
      const id = `wh-${randomBytes(9).toString("base64url")}`;
      const startSeq = (await jsm.streams.info(STREAMS.events.name)).state.last_seq + 1;
      const filter = body.sessionId
        ? subjects.event(partitionOf(body.sessionId, partitions), body.sessionId)
        : (STREAMS.events.subjects[0] as string);
      const record: WebhookRecord = {
        id,
        tenant,
        url: body.url,
        events: [...new Set(body.events)],
        sessionId: body.sessionId ?? null,
        secret: body.secret ?? randomBytes(24).toString("base64url"),
        createdAt: now,
        startSeq,
      };
      await jsm.consumers.add(
        STREAMS.events.name,
        webhookConsumer(id, filter, startSeq) as unknown as Partial<ConsumerConfig>,
      );
      await kv.create(id, JSON.stringify(record));
      return record;
    },
    async list(tenant) {
      const records = (await readKvEntries(kv)).map((e) => decodeWebhook(e.value));
      return records
        .filter((r): r is WebhookRecord => r !== undefined && r.tenant === tenant)
        .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
    },
    get,
    async remove(id) {
      await kv.delete(id);
      await jsm.consumers.delete(STREAMS.events.name, durableOf(id)).catch(() => false);
    },
  };
}
