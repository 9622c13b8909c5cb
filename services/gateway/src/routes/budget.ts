// The tenant's daily budget: `GET /v1/budget` (limits and what its sessions spent on a UTC day),
// `PUT /v1/budget` (set the limits), `DELETE /v1/budget` (no limits).
import { sessionsBySpend } from "@fleet/client";
import { BudgetLimits, Spend, UtcDay } from "@fleet/protocol";
import { z } from "zod";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import type { RouteContext } from "./route-context.js";

const BudgetQuery = z.object({ day: UtcDay.optional() }).strict();
const LimitsBody = BudgetLimits.strict();
const TenantBudget = z.object({
  day: UtcDay,
  /** `null`: the tenant has no daily limits. */
  limits: BudgetLimits.nullable(),
  total: Spend,
  /** Every session that spent on `day`, the most expensive first. */
  sessions: z.array(z.object({ sessionId: z.string(), ...Spend.shape })),
  /** What sessions deleted or archived since spent on `day` (the tenant's ledger; in `total`). */
  deleted: Spend,
});
const LimitsSet = z.object({ limits: BudgetLimits });

export function budgetRoutes(ctx: RouteContext): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "GET",
      url: "/v1/budget",
      operationId: "getTenantBudget",
      summary: "The tenant's daily limits and what its sessions spent on a UTC day (default today)",
      description:
        'A new run is refused `budget_exceeded` once the day\'s spend is at a limit, and a running one is cut (PROTOCOL "Budgets").',
      tag: "budget",
      access: "read",
      usesNats: true,
      query: BudgetQuery,
      responses: { 200: { description: "Limits and spend", schema: TenantBudget } },
      async handler({ query, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        const report = await link.client.tenantBudget(query.day);
        const sessions = sessionsBySpend(report);
        return {
          status: 200,
          json: {
            day: report.day,
            limits: report.limits ?? null,
            total: report.total,
            sessions,
            deleted: report.deleted,
          },
        };
      },
    }),
    defineRoute({
      method: "PUT",
      url: "/v1/budget",
      operationId: "setTenantBudget",
      summary: "Set the tenant's daily limits (tokens and/or USD per UTC day, over all its sessions)",
      description:
        "Replaces the limits; a field left out is no limit, and an unknown field is a 400. The loop workers apply them at the next check, running sessions included.",
      tag: "budget",
      access: "operate",
      usesNats: true,
      body: LimitsBody,
      responses: { 200: { description: "The limits now in force", schema: LimitsSet } },
      async handler({ body, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        await link.client.setTenantLimits(body);
        ctx.logger.info({ evt: "gateway_budget_set", tenant: principal.tenant, limits: body }, "tenant budget set");
        return { status: 200, json: { limits: body } };
      },
    }),
    defineRoute({
      method: "DELETE",
      url: "/v1/budget",
      operationId: "deleteTenantBudget",
      summary: "Remove the tenant's daily limits",
      tag: "budget",
      access: "operate",
      usesNats: true,
      responses: { 204: { description: "Removed (the tenant has no daily limit)" } },
      async handler({ principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        await link.client.setTenantLimits(null);
        ctx.logger.info({ evt: "gateway_budget_removed", tenant: principal.tenant }, "tenant budget removed");
        return { status: 204, text: "", contentType: "text/plain" };
      },
    }),
  ];
}
