// Webhooks: register, list, show (state and last deliveries), enable, delete (delivery runs in
// webhooks/webhook-service.ts).
import { apiError } from "../http/api-error.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import { type DeliveryPolicy, urlRefusal } from "../webhooks/safe-post.js";
import {
  RegisterWebhookBody,
  viewOf,
  WebhookCreated,
  WebhookDetail,
  WebhookList,
  WebhookParams,
  type WebhookRecord,
} from "../webhooks/webhook-record.js";
import type { WebhookStore } from "../webhooks/webhook-store.js";
import type { RouteContext } from "./route-context.js";

/** `store`: the tenant's webhook registrations, in its own account. */
export function webhookRoutes(
  ctx: RouteContext,
  store: (tenant: string) => Promise<WebhookStore>,
  policy: DeliveryPolicy,
): AnyRouteSpec[] {
  /** The tenant's registration, or a 404 (another tenant's is not theirs to see). */
  const owned = async (id: string, tenant: string): Promise<WebhookRecord | undefined> => {
    const record = await (await store(tenant)).get(id);
    return record && record.tenant === tenant ? record : undefined;
  };
  const missing = (id: string) => apiError(404, "not_found", `webhook ${id} does not exist`);
  return [
    defineRoute({
      method: "POST",
      url: "/v1/webhooks",
      operationId: "registerWebhook",
      summary: "Register a webhook for any event types (`*`: all), of one session or of all",
      description:
        "Events after the registration whose type is in `events` are POSTed to `url` as `{webhookId, sessionId, seq, event}`, at least once, in stream order (per stream group), retried with exponential backoff until the receiver answers 2xx. Headers: `Fleet-Signature: sha256=<hex HMAC-SHA256 of the body keyed by the secret>`, `Idempotency-Key: <stream sequence>` (`<g>.<seq>` for a webhook for every session on a log of K > 1 stream groups, whose streams' sequences overlap), `Fleet-Event-Type`, `Fleet-Webhook-Id`. The secret is returned only here. The URL's host must resolve to public addresses only (no loopback, private, link-local, reserved or cloud metadata address; FLEET_WEBHOOK_ALLOW_PRIVATE lifts this), checked again at every delivery and redirect. After FLEET_GATEWAY_WEBHOOK_MAX_FAILURES failed attempts in a row (20) the webhook is disabled.",
      tag: "webhooks",
      access: "operate",
      usesNats: true,
      body: RegisterWebhookBody,
      responses: {
        201: { description: "Registered", schema: WebhookCreated },
        400: { description: "`address_refused`: the URL's host is, or resolves to, a refused address" },
      },
      async handler({ body, principal }) {
        const refused = await urlRefusal(body.url, policy);
        if (refused) {
          ctx.logger.info({ evt: "gateway_webhook_refused", reason: refused }, "webhook address refused");
          return apiError(400, "address_refused", `webhook url refused: ${refused}`);
        }
        const webhooks = await store(principal.tenant);
        const record = await webhooks.register(principal.tenant, body, Date.now());
        ctx.logger.info(
          { evt: "gateway_webhook_registered", webhookId: record.id, tenant: principal.tenant, events: record.events },
          "webhook registered",
        );
        return { status: 201, json: { ...viewOf(record), secret: record.secret } };
      },
    }),
    defineRoute({
      method: "GET",
      url: "/v1/webhooks",
      operationId: "listWebhooks",
      summary: "The tenant's webhooks (without their secrets)",
      tag: "webhooks",
      access: "read",
      usesNats: true,
      responses: { 200: { description: "The registrations", schema: WebhookList } },
      async handler({ principal }) {
        const records = await (await store(principal.tenant)).list(principal.tenant);
        return { status: 200, json: { webhooks: records.map(viewOf) } };
      },
    }),
    defineRoute({
      method: "GET",
      url: "/v1/webhooks/:id",
      operationId: "getWebhook",
      summary: "A webhook, its state and its last delivery attempts and failures",
      tag: "webhooks",
      access: "read",
      usesNats: true,
      params: WebhookParams,
      responses: {
        200: { description: "The registration and its delivery status", schema: WebhookDetail },
        404: { description: "No such webhook" },
      },
      async handler({ params, principal }) {
        const record = await owned(params.id, principal.tenant);
        if (!record) return missing(params.id);
        const status = await (await store(principal.tenant)).status(params.id);
        return { status: 200, json: { ...viewOf(record), status } };
      },
    }),
    defineRoute({
      method: "POST",
      url: "/v1/webhooks/:id/enable",
      operationId: "enableWebhook",
      summary: "Enable a disabled webhook: delivery resumes with the first event it had not delivered",
      tag: "webhooks",
      access: "operate",
      usesNats: true,
      params: WebhookParams,
      responses: {
        200: { description: "The registration, active", schema: WebhookDetail },
        404: { description: "No such webhook" },
      },
      async handler({ params, principal }) {
        if (!(await owned(params.id, principal.tenant))) return missing(params.id);
        const s = await store(principal.tenant);
        const record = await s.setState(params.id, "active", "", Date.now());
        if (!record) return missing(params.id);
        ctx.logger.info({ evt: "gateway_webhook_enabled", webhookId: params.id }, "webhook enabled");
        return { status: 200, json: { ...viewOf(record), status: await s.status(params.id) } };
      },
    }),
    defineRoute({
      method: "DELETE",
      url: "/v1/webhooks/:id",
      operationId: "deleteWebhook",
      summary: "Delete a webhook and what it had not delivered",
      tag: "webhooks",
      access: "operate",
      usesNats: true,
      params: WebhookParams,
      responses: { 204: { description: "Deleted" }, 404: { description: "No such webhook" } },
      async handler({ params, principal }) {
        if (!(await owned(params.id, principal.tenant))) return missing(params.id);
        await (await store(principal.tenant)).remove(params.id);
        ctx.logger.info({ evt: "gateway_webhook_deleted", webhookId: params.id }, "webhook deleted");
        return { status: 204, text: "", contentType: "text/plain" };
      },
    }),
  ];
}
