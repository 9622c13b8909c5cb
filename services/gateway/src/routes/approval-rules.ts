// Approval rules (PROTOCOL "Approvals"): the tenant's (`GET`/`PUT /v1/approval-rules`, KV
// `fleet_config` key `approval_rules`) and a session's (`GET`/`PUT /v1/sessions/{id}/approval-rules`,
// `set_approval_rules` on its log). A call is decided with the commands route: `approve_tool_call`
// (`args`: run it with edited arguments) or `deny_tool_call`.
import { ApprovalRules } from "@fleet/protocol";
import { z } from "zod";
import { CommandOutcome, SessionParams } from "../api-schemas.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import type { RouteContext } from "./route-context.js";

const RulesBody = z.object({ rules: ApprovalRules }).strict();
const Rules = z.object({ rules: ApprovalRules });
const PRECEDENCE =
  "Rules are `{tool, args?: {pointer, regex, flags?}, action: allow|ask|deny, expiresInMs?, reason?}`; the first match wins over the session's rules, then the tenant's, then the loop worker's `FLEET_APPROVAL_TOOLS` (ask); no match runs the call.";

export function approvalRuleRoutes(ctx: RouteContext): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "GET",
      url: "/v1/approval-rules",
      operationId: "getTenantApprovalRules",
      summary: "The tenant's approval rules",
      description: PRECEDENCE,
      tag: "approvals",
      access: "read",
      usesNats: true,
      responses: { 200: { description: "The tenant's rules (empty: none)", schema: Rules } },
      async handler({ principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        return { status: 200, json: { rules: await link.client.tenantApprovalRules() } };
      },
    }),
    defineRoute({
      method: "PUT",
      url: "/v1/approval-rules",
      operationId: "setTenantApprovalRules",
      summary: "Replace the tenant's approval rules (`[]` removes them)",
      description: `${PRECEDENCE} The loop workers apply them from their next tool call on, running sessions included.`,
      tag: "approvals",
      access: "operate",
      usesNats: true,
      body: RulesBody,
      responses: { 200: { description: "The rules now in force", schema: Rules } },
      async handler({ body, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        const rules = await link.client.setTenantApprovalRules(body.rules);
        ctx.logger.info(
          { evt: "gateway_approval_rules_set", tenant: principal.tenant, rules: rules.length },
          "tenant approval rules set",
        );
        return { status: 200, json: { rules } };
      },
    }),
    defineRoute({
      method: "GET",
      url: "/v1/sessions/:id/approval-rules",
      operationId: "getSessionApprovalRules",
      summary: "A session's approval rules (its last `approval_rules_set`)",
      description: PRECEDENCE,
      tag: "approvals",
      access: "read",
      usesNats: true,
      params: SessionParams,
      responses: { 200: { description: "The session's rules (empty: none)", schema: Rules } },
      async handler({ params, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        return { status: 200, json: { rules: await link.client.approvalRules(params.id) } };
      },
    }),
    defineRoute({
      method: "PUT",
      url: "/v1/sessions/:id/approval-rules",
      operationId: "setSessionApprovalRules",
      summary: "Replace a session's approval rules (`set_approval_rules`; `[]` removes them)",
      description: `${PRECEDENCE} Answers with the command's outcome event, as the commands route does (a rejection is an outcome).`,
      tag: "approvals",
      access: "operate",
      usesNats: true,
      params: SessionParams,
      body: RulesBody,
      responses: { 200: { description: "The outcome event and its stream sequence", schema: CommandOutcome } },
      async handler({ params, body, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        const outcome = await link.client.outcomeOf(
          params.id,
          { type: "set_approval_rules", rules: body.rules },
          { timeoutMs: ctx.commandTimeoutMs },
        );
        ctx.metrics.commands.inc({ type: "set_approval_rules", outcome: outcome.event.type });
        return { status: 200, json: outcome };
      },
    }),
  ];
}
