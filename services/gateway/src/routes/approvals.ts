// `GET /v1/approvals`: tool calls waiting for a person's decision (decided through the commands route).
import { approvalsWithDescendants } from "@fleet/client";
import { PendingApproval } from "@fleet/protocol";
import { z } from "zod";
import { ApprovalsQuery } from "../api-schemas.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import type { TenantLink } from "../tenant-links.js";
import type { RouteContext } from "./route-context.js";

const Approvals = z.object({ approvals: z.array(PendingApproval) });

/** The pending approvals of `sessionId`, or of every session of the tenant (the store's approvals index). */
export async function pendingApprovals(link: TenantLink, sessionId: string | undefined): Promise<PendingApproval[]> {
  return (await link.client.listApprovals(sessionId !== undefined ? { sessionId } : {})).approvals;
}

export function approvalRoutes(ctx: RouteContext): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "GET",
      url: "/v1/approvals",
      operationId: "listApprovals",
      summary: "Pending tool approvals, oldest first",
      description:
        "Tool calls with a `tool_approval_requested` event and no decision yet (or those of `sessionId`), from the session store's approvals index: the cost follows the number of pending approvals, not of sessions. Decide with the commands route: `approve_tool_call` or `deny_tool_call`. With `sessionId` and `descendants=true`, the approvals of the child sessions it started (sub-agents) too, each naming the session to decide it on.",
      tag: "approvals",
      access: "read",
      usesNats: true,
      query: ApprovalsQuery,
      responses: { 200: { description: "The pending approvals", schema: Approvals } },
      async handler({ query, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        const root = query.sessionId;
        if (root !== undefined && query.descendants === "true") {
          const approvals = await approvalsWithDescendants(
            (id) => pendingApprovals(link, id),
            (id) => link.views.current(id),
            root,
          );
          return { status: 200, json: { approvals } };
        }
        return { status: 200, json: { approvals: await pendingApprovals(link, root) } };
      },
    }),
  ];
}
