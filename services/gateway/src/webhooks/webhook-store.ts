// Webhook registrations in KV `fleet_webhooks` (key `<id>`), each with its durable consumer on the
// event stream of its session's group (FLEET_EVENTS with K = 1), or one on every group's stream for a
// webhook for every session, and its delivery status (key `<id>.status`).
import { randomBytes } from "node:crypto";
import {
  eventStreamName,
  eventStreamNames,
  groupOf,
  KV_BUCKETS,
  type LogTopology,
  partitionOf,
  STREAMS,
  subjects,
  webhookConsumer,
} from "@fleet/protocol";
import { readKvEntries } from "@fleet/runtime";
import type { ConsumerConfig, JetStreamManager } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { z } from "zod";
import {
  type DeliveryAttempt,
  EMPTY_STATUS,
  type RegisterWebhookBody,
  WebhookRecord,
  WebhookStatus,
  withAttempt,
} from "./webhook-record.js";

/** KV key filter of the registrations (one token); statuses are `<id>.status`. */
export const REGISTRATION_KEYS = "*";
const statusKey = (id: string) => `${id}.status`;

/**
 * One event stream a webhook reads: its durable consumer `webhook-<id>` there, and the prefix of the
 * `Idempotency-Key` of its events (`""`, or `<g>.` when the webhook reads several streams).
 */
export interface WebhookSource {
  stream: string;
  keyPrefix: string;
}

export interface WebhookStore {
  readonly kv: KV;
  /**
   * The streams holding the webhook's durable consumers: its session's group's; for a webhook for
   * every session, FLEET_EVENTS (K = 1) or every group's stream, in group order (`startSeqs`).
   */
  sourcesOf(record: Pick<WebhookRecord, "sessionId" | "startSeqs">): WebhookSource[];
  /** Creates the consumer, then the registration (so a deliverer that sees it finds its consumer). */
  register(tenant: string, body: z.infer<typeof RegisterWebhookBody>, now: number): Promise<WebhookRecord>;
  /** Every registration of a tenant, oldest first. */
  list(tenant: string): Promise<WebhookRecord[]>;
  get(id: string): Promise<WebhookRecord | undefined>;
  /** Removes the registration and its status, then its consumer (with what it had not delivered). */
  remove(id: string): Promise<void>;
  /** The delivery status (empty before the first attempt). */
  status(id: string): Promise<WebhookStatus>;
  /** Adds attempts, in order, to the status (one compare-and-set); the status after them. */
  recordAttempts(id: string, attempts: readonly DeliveryAttempt[]): Promise<WebhookStatus>;
  /**
   * Sets the state (compare-and-set). Enabling also clears the run of failures. Undefined when the
   * registration does not exist.
   */
  setState(id: string, state: "active" | "disabled", reason: string, now: number): Promise<WebhookRecord | undefined>;
}

export const durableOf = (webhookId: string) => webhookConsumer(webhookId, null, 1).durable_name;

const decoder = new TextDecoder();

function decodeWith<T>(schema: z.ZodType<T>, value: Uint8Array): T | undefined {
  try {
    const parsed = schema.safeParse(JSON.parse(decoder.decode(value)));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Decodes a stored registration; undefined for a value that is not one. */
export const decodeWebhook = (value: Uint8Array): WebhookRecord | undefined => decodeWith(WebhookRecord, value);

/** Compare-and-set attempts before an update gives up (writers are one gateway at a time per webhook). */
const CAS_ATTEMPTS = 10;

/** Reads a key, applies `change` and writes it back unless another writer came first (then again). */
async function casUpdate<T>(
  kv: KV,
  key: string,
  read: (value: Uint8Array | undefined) => T | undefined,
  change: (current: T | undefined) => T | undefined,
): Promise<T | undefined> {
  for (let attempt = 1; ; attempt++) {
    const entry = await kv.get(key);
    const current = entry?.operation === "PUT" ? read(entry.value) : undefined;
    const next = change(current);
    if (next === undefined) return undefined;
    try {
      if (entry) await kv.update(key, JSON.stringify(next), entry.revision);
      else await kv.create(key, JSON.stringify(next));
      return next;
    } catch (err) {
      if (attempt >= CAS_ATTEMPTS) throw err;
    }
  }
}

export async function openWebhookStore(
  nc: NatsConnection,
  jsm: JetStreamManager,
  log: LogTopology,
  replicas = 1,
): Promise<WebhookStore> {
  const sourcesOf = (record: Pick<WebhookRecord, "sessionId" | "startSeqs">): WebhookSource[] => {
    if (record.sessionId) {
      const group = groupOf(partitionOf(record.sessionId, log.partitions), log.groups);
      return [{ stream: eventStreamName(group, log.groups), keyPrefix: "" }];
    }
    // A registration made on this log has startSeqs exactly when K > 1.
    if (!record.startSeqs) return [{ stream: eventStreamName(0, log.groups), keyPrefix: "" }];
    return record.startSeqs.map((_, g) => ({ stream: eventStreamName(g, log.groups), keyPrefix: `${g}.` }));
  };
  const kv = await new Kvm(nc).create(KV_BUCKETS.webhooks.name, { history: KV_BUCKETS.webhooks.history, replicas });
  const get = async (id: string) => {
    const entry = await kv.get(id);
    return entry?.operation === "PUT" ? decodeWebhook(entry.value) : undefined;
  };
  const readStatus = (value: Uint8Array | undefined) => (value ? decodeWith(WebhookStatus, value) : undefined);
  return {
    kv,
    sourcesOf,
    async register(tenant, body, now) {
      const id = `wh-${randomBytes(9).toString("base64url")}`;
      const everySession = !body.sessionId && log.groups > 1;
      const streams = everySession
        ? eventStreamNames(log.groups)
        : sourcesOf({ sessionId: body.sessionId ?? null }).map((s) => s.stream);
      const startSeqs = await Promise.all(streams.map(async (s) => (await jsm.streams.info(s)).state.last_seq + 1));
      const startSeq = startSeqs[0] as number;
      // A group's stream holds only its partitions' subjects (nats-server 2.9 refuses a filter that is
      // not a subset of them): a webhook for every session reads each unfiltered.
      const filter = body.sessionId
        ? subjects.event(partitionOf(body.sessionId, log.partitions), body.sessionId)
        : everySession
          ? null
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
        ...(everySession ? { startSeqs } : {}),
        state: "active",
      };
      for (const [i, stream] of streams.entries()) {
        const config = webhookConsumer(id, filter, startSeqs[i] as number);
        await jsm.consumers.add(stream, config as unknown as Partial<ConsumerConfig>);
      }
      await kv.create(id, JSON.stringify(record));
      return record;
    },
    async list(tenant) {
      const records = (await readKvEntries(kv, REGISTRATION_KEYS)).map((e) => decodeWebhook(e.value));
      return records
        .filter((r): r is WebhookRecord => r !== undefined && r.tenant === tenant)
        .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
    },
    get,
    async remove(id) {
      const record = await get(id);
      await kv.delete(id);
      await kv.delete(statusKey(id)).catch(() => undefined);
      const sources = sourcesOf(record ?? { sessionId: null });
      for (const { stream } of sources) await jsm.consumers.delete(stream, durableOf(id)).catch(() => false);
    },
    async status(id) {
      const entry = await kv.get(statusKey(id));
      return (entry?.operation === "PUT" ? readStatus(entry.value) : undefined) ?? EMPTY_STATUS;
    },
    async recordAttempts(id, attempts) {
      const next = await casUpdate(kv, statusKey(id), readStatus, (current) =>
        attempts.reduce((status, attempt) => withAttempt(status, attempt), current ?? EMPTY_STATUS),
      );
      return next as WebhookStatus;
    },
    async setState(id, state, reason, now) {
      const record = await casUpdate(
        kv,
        id,
        (v) => (v ? decodeWebhook(v) : undefined),
        (current) => {
          if (!current) return undefined;
          const { disabledReason: _r, disabledAt: _a, ...rest } = current;
          return state === "disabled"
            ? { ...rest, state, disabledReason: reason, disabledAt: now }
            : { ...rest, state };
        },
      );
      if (record && state === "active") {
        await casUpdate(kv, statusKey(id), readStatus, (current) => ({
          ...(current ?? EMPTY_STATUS),
          consecutiveFailures: 0,
        }));
      }
      return record;
    },
  };
}
