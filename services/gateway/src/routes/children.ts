// `GET /v1/sessions/{id}/children`: the child sessions a session's `agent` calls started (change 57).
import { type SessionChild, sessionChildren } from "@fleet/client";
import { SessionId, Spend } from "@fleet/protocol";
import { z } from "zod";
import { SessionParams } from "../api-schemas.js";
import { apiError } from "../http/api-error.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import type { RouteContext } from "./route-context.js";

/** A child session and, with `depth`, its own children: recursive, so a named OpenAPI component. */
export const ChildNode: z.ZodType<SessionChild> = z.lazy(() =>
  z.object({
    sessionId: SessionId,
    toolCallId: z.string(),
    agent: z.string().optional(),
    description: z.string().optional(),
    status: z.enum(["pending", "running", "idle"]),
    seq: z.number().int().nonnegative(),
    spend: Spend,
    children: z.array(ChildNode).optional(),
  }),
);
export const SessionChildrenBody = z.object({ sessionId: SessionId, children: z.array(ChildNode) });
export const ChildrenQuery = z.object({ depth: z.coerce.number().int().min(1).max(10).optional() });

export function childrenRoutes(ctx: RouteContext): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "GET",
      url: "/v1/sessions/:id/children",
      operationId: "getSessionChildren",
      summary: "The child sessions (sub-agents) the session's agent calls started, with status and spend",
      description:
        "Derived from the session's transcript (each `agent` call names its child's id) and each child's log; `depth` (default 1) adds the children's own children.",
      tag: "sessions",
      access: "read",
      usesNats: true,
      params: SessionParams,
      query: ChildrenQuery,
      responses: {
        200: { description: "The children, in call order", schema: SessionChildrenBody },
        404: { description: "No such session" },
      },
      async handler({ params, query, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        const view = await link.views.current(params.id);
        if (view.seq === 0 || view.tree.sessionId === null) {
          return apiError(404, "not_found", `session ${params.id} does not exist`);
        }
        const children = await sessionChildren((id) => link.views.current(id), params.id, query.depth ?? 1, view);
        return { status: 200, json: { sessionId: params.id, children } };
      },
    }),
  ];
}
