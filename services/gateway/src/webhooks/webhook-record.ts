// Webhook registrations: what a client sends, what KV `fleet_webhooks` holds, what the API shows.
import { SessionId } from "@fleet/protocol";
import { z } from "zod";

/** The events a webhook can subscribe to. */
export const WEBHOOK_EVENT_TYPES = ["agent_end", "tool_approval_requested", "command_rejected"] as const;
export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES);

const HttpUrl = z
  .string()
  .max(2048)
  .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), "must be an http(s) URL");

export const RegisterWebhookBody = z
  .object({
    url: HttpUrl,
    events: z.array(WebhookEventType).min(1),
    /** Only this session's events; default every session. */
    sessionId: SessionId.optional(),
    /** HMAC-SHA256 key of the signature header; default a random one (returned once). */
    secret: z.string().min(16).max(256).optional(),
  })
  .strict();

/** The stored registration (value of `fleet_webhooks.<id>`). */
export const WebhookRecord = z.object({
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  tenant: z.string(),
  url: HttpUrl,
  events: z.array(WebhookEventType),
  sessionId: SessionId.nullable(),
  secret: z.string(),
  createdAt: z.number().int().nonnegative(),
  /** First stream sequence it delivers (the stream's next sequence at registration). */
  startSeq: z.number().int().positive(),
});
export type WebhookRecord = z.infer<typeof WebhookRecord>;

/** A registration as the API lists it: everything but the secret. */
export const WebhookView = WebhookRecord.omit({ secret: true, tenant: true });
export const WebhookCreated = WebhookView.extend({ secret: z.string() });
export const WebhookList = z.object({ webhooks: z.array(WebhookView) });
export const WebhookParams = z.object({ id: WebhookRecord.shape.id });

export const viewOf = ({ secret: _s, tenant: _t, ...view }: WebhookRecord) => view;

/** The body of one delivery (POSTed as JSON). */
export const WebhookDelivery = z.object({
  webhookId: z.string(),
  sessionId: z.string(),
  /** Stream sequence of the event; also the `Idempotency-Key` header. */
  seq: z.number().int().positive(),
  event: z.unknown(),
});
