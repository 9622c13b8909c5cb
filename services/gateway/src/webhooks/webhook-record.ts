// Webhook registrations: what a client sends, what KV `fleet_webhooks` holds, what the API shows.
import { FleetEvent, SessionId } from "@fleet/protocol";
import { z } from "zod";

/** Every event type of the protocol: a webhook may subscribe to any of them. */
export const WEBHOOK_EVENT_TYPES = FleetEvent.options.map((o) => o.shape.type.value) as [string, ...string[]];
/** An event type, or `*` for every event. */
export const WebhookEventType = z.union([z.enum(WEBHOOK_EVENT_TYPES), z.literal("*")]);

const HttpUrl = z
  .string()
  .max(2048)
  .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), "must be an http(s) URL");

export const RegisterWebhookBody = z
  .object({
    url: HttpUrl,
    /** The event types delivered (`*`: every event); other events of the filtered subjects are skipped. */
    events: z.array(WebhookEventType).min(1).max(64),
    /** Only this session's events; default every session. */
    sessionId: SessionId.optional(),
    /** HMAC-SHA256 key of the signature header; default a random one (returned once). */
    secret: z.string().min(16).max(256).optional(),
  })
  .strict();

/** `active`: delivering; `disabled`: stopped after a run of failures (or by hand), undelivered events kept. */
export const WebhookState = z.enum(["active", "disabled"]);

/** The stored registration (value of `fleet_webhooks.<id>`). */
export const WebhookRecord = z.object({
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  tenant: z.string(),
  url: HttpUrl,
  events: z.array(WebhookEventType),
  sessionId: SessionId.nullable(),
  secret: z.string(),
  createdAt: z.number().int().nonnegative(),
  /** First stream sequence it delivers (the stream's next sequence at registration; group 0's, with `startSeqs`). */
  startSeq: z.number().int().positive(),
  /**
   * A webhook for every session on a log of K > 1 stream groups: the first sequence it delivers of each
   * group's stream, in group order (index g: `FLEET_EVENTS_G<g>`). Absent otherwise (one stream).
   */
  startSeqs: z.array(z.number().int().positive()).min(2).optional(),
  /** Absent in registrations made before states existed: active. */
  state: WebhookState.default("active"),
  /** Why and when it was disabled (while `disabled`). */
  disabledReason: z.string().optional(),
  disabledAt: z.number().int().nonnegative().optional(),
});
export type WebhookRecord = z.infer<typeof WebhookRecord>;

/** One delivery attempt as the status keeps it. */
export const DeliveryAttempt = z.object({
  /** Stream sequence of the event (its `Idempotency-Key`). */
  seq: z.number().int().positive(),
  sessionId: z.string(),
  eventType: z.string(),
  /** 1 for the first attempt of this event. */
  attempt: z.number().int().positive(),
  /** When the attempt ended (ms since the epoch). */
  at: z.number().int().nonnegative(),
  durationMs: z.number().int().nonnegative(),
  /** `ok` (2xx), `http` (another status), `refused` (an address the policy refuses), `timeout`, `error`. */
  outcome: z.enum(["ok", "http", "refused", "timeout", "error"]),
  status: z.number().int().optional(),
  /** The address connected to, when a connection was made. */
  address: z.string().optional(),
  /** For failures: the answer's first bytes, the refusal or the network error. */
  detail: z.string().optional(),
});
export type DeliveryAttempt = z.infer<typeof DeliveryAttempt>;

/** What `fleet_webhooks.<id>.status` holds: counters and the last attempts. */
export const WebhookStatus = z.object({
  delivered: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  /** Failed attempts since the last success (or since it was enabled). */
  consecutiveFailures: z.number().int().nonnegative(),
  /** The last attempts, newest first. */
  lastDeliveries: z.array(DeliveryAttempt),
  /** The last failed attempts, newest first. */
  lastFailures: z.array(DeliveryAttempt),
  /** When the newest success and the newest failure ended (order attempts recorded late). */
  lastSuccessAt: z.number().int().nonnegative().optional(),
  lastFailureAt: z.number().int().nonnegative().optional(),
});
export type WebhookStatus = z.infer<typeof WebhookStatus>;

export const EMPTY_STATUS: WebhookStatus = {
  delivered: 0,
  failed: 0,
  consecutiveFailures: 0,
  lastDeliveries: [],
  lastFailures: [],
};

/** Attempts each list of the status keeps. */
export const STATUS_KEEP = 20;

/** Newest first, by the time each attempt ended. */
const newestFirst = (attempts: DeliveryAttempt[], keep: number) => attempts.sort((a, b) => b.at - a.at).slice(0, keep);

/**
 * Pure: the status after `attempt`. A success resets the run of failures, and a failure adds to it,
 * only when it ended after the newest attempt of the other kind: attempts may be recorded out of
 * order (a gateway records its successes in batches while another gateway records a failure).
 */
export function withAttempt(status: WebhookStatus, attempt: DeliveryAttempt, keep = STATUS_KEEP): WebhookStatus {
  const ok = attempt.outcome === "ok";
  const lastSuccessAt = status.lastSuccessAt ?? 0;
  const lastFailureAt = status.lastFailureAt ?? 0;
  const consecutiveFailures = ok
    ? attempt.at >= lastFailureAt
      ? 0
      : status.consecutiveFailures
    : attempt.at >= lastSuccessAt
      ? status.consecutiveFailures + 1
      : status.consecutiveFailures;
  return {
    delivered: status.delivered + (ok ? 1 : 0),
    failed: status.failed + (ok ? 0 : 1),
    consecutiveFailures,
    lastDeliveries: newestFirst([attempt, ...status.lastDeliveries], keep),
    lastFailures: ok ? status.lastFailures : newestFirst([attempt, ...status.lastFailures], keep),
    lastSuccessAt: ok ? Math.max(lastSuccessAt, attempt.at) : status.lastSuccessAt,
    lastFailureAt: ok ? status.lastFailureAt : Math.max(lastFailureAt, attempt.at),
  } as WebhookStatus;
}

/** A registration as the API lists it: everything but the secret. */
export const WebhookView = WebhookRecord.omit({ secret: true, tenant: true });
export const WebhookCreated = WebhookView.extend({ secret: z.string() });
export const WebhookList = z.object({ webhooks: z.array(WebhookView) });
export const WebhookDetail = WebhookView.extend({ status: WebhookStatus });
export const WebhookParams = z.object({ id: WebhookRecord.shape.id });

export const viewOf = ({ secret: _s, tenant: _t, ...view }: WebhookRecord) => view;

/** The body of one delivery (POSTed as JSON). */
export const WebhookDelivery = z.object({
  webhookId: z.string(),
  sessionId: z.string(),
  /**
   * Stream sequence of the event (of its group's stream). The `Idempotency-Key` header is this
   * sequence, or `<g>.<seq>` for a webhook with `startSeqs` (it reads K streams, whose sequences overlap).
   */
  seq: z.number().int().positive(),
  event: z.unknown(),
});
