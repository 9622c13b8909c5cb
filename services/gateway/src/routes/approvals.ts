// `GET /v1/approvals`: tool calls waiting for a person's decision (decided through the commands route).
import { z } from "zod";
import { ApprovalsQuery } from "../api-schemas.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import { PendingApproval } from "../pending-approvals.js";
import type { TenantLink } from "../tenant-links.js";
import type { RouteContext } from "./route-context.js";

const Approvals = z.object({ approvals: z.array(PendingApproval) });
const PAGE = 1000;

/** The pending approvals of `sessionId`, or of every running session of the tenant. */
export async function pendingApprovals(link: TenantLink, sessionId: string | undefined): Promise<PendingApproval[]> {
  let sessionIds: string[];
  if (sessionId !== undefined) sessionIds = [sessionId];
  else {
    sessionIds = [];
    let cursor: string | undefined;
    do {
      const page = await link.client.listSessions({ limit: PAGE, ...(cursor ? { cursor } : {}) });
      for (const s of page.sessions) if (s.status === "running") sessionIds.push(s.sessionId);
      cursor = page.cursor;
    } while (cursor);
  }
  return link.approvals.pending(sessionIds);
}

export function approvalRoutes(ctx: RouteContext): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "GET",
      url: "/v1/approvals",
      operationId: "listApprovals",
      summary: "Pending tool approvals, oldest first",
      description:
        "Tool calls with a `tool_approval_requested` event and no decision yet, in running sessions (or in `sessionId`). Decide with the commands route: `approve_tool_call` or `deny_tool_call`.",
      tag: "approvals",
      access: "read",
      usesNats: true,
      query: ApprovalsQuery,
      responses: { 200: { description: "The pending approvals", schema: Approvals } },
      async handler({ query, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        return { status: 200, json: { approvals: await pendingApprovals(link, query.sessionId) } };
      },
    }),
  ];
}
