// Webhooks: register, list, delete (delivery runs in webhooks/webhook-service.ts).
import { apiError } from "../http/api-error.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import { RegisterWebhookBody, viewOf, WebhookCreated, WebhookList, WebhookParams } from "../webhooks/webhook-record.js";
import type { WebhookStore } from "../webhooks/webhook-store.js";
import type { RouteContext } from "./route-context.js";

/** `store`: the tenant's webhook registrations, in its own account. */
export function webhookRoutes(ctx: RouteContext, store: (tenant: string) => Promise<WebhookStore>): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "POST",
      url: "/v1/webhooks",
      operationId: "registerWebhook",
      summary: "Register a webhook for agent_end, tool_approval_requested and/or command_rejected events",
      description:
        "Events after the registration are POSTed to `url` as `{webhookId, sessionId, seq, event}`, at least once, in stream order, retried with exponential backoff until the receiver answers 2xx. Headers: `Fleet-Signature: sha256=<hex HMAC-SHA256 of the body keyed by the secret>`, `Idempotency-Key: <stream sequence>`, `Fleet-Event-Type`, `Fleet-Webhook-Id`. The secret is returned only here.",
      tag: "webhooks",
      access: "operate",
      usesNats: true,
      body: RegisterWebhookBody,
      responses: { 201: { description: "Registered", schema: WebhookCreated } },
      async handler({ body, principal }) {
        const record = await (await store(principal.tenant)).register(principal.tenant, body, Date.now());
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
        const s = await store(principal.tenant);
        const record = await s.get(params.id);
        if (!record || record.tenant !== principal.tenant) {
          return apiError(404, "not_found", `webhook ${params.id} does not exist`);
        }
        await s.remove(params.id);
        ctx.logger.info({ evt: "gateway_webhook_deleted", webhookId: params.id }, "webhook deleted");
        return { status: 204, text: "", contentType: "text/plain" };
      },
    }),
  ];
}
