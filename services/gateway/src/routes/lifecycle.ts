// Session lifecycle over HTTP: `DELETE /v1/sessions/{id}`, `POST /v1/sessions/{id}/archive`, and the
// restore of `POST /v1/sessions {restoreFrom}` (sessions.ts).
import { CommandRejectedError, type FleetClient, isFleetError, newId } from "@fleet/client";
import type { LifecycleRecord } from "@fleet/protocol";
import { CommandPending, LifecycleDone, LifecycleQuery, SessionParams } from "../api-schemas.js";
import { apiError, rejectionStatus } from "../http/api-error.js";
import { type AnyRouteSpec, defineRoute, type RouteOutput } from "../http/route-spec.js";
import type { Principal } from "../http/tokens-file.js";
import type { RouteContext } from "./route-context.js";

/** The requester a lifecycle record names for a gateway call: tenant, role and token id (never the token). */
export const requesterOf = (p: Principal) => `gateway ${p.tenant}/${p.role}${p.tokenId ? ` token ${p.tokenId}` : ""}`;

type Operation = (
  client: FleetClient,
  sessionId: string,
  opts: { by: string; commandId: string; timeoutMs: number },
) => Promise<LifecycleRecord>;

/** Runs a lifecycle operation: `ok` with its record, its rejection as an error, or 202 on timeout. */
export async function lifecycleOutcome(
  sessionId: string,
  commandId: string,
  run: () => Promise<LifecycleRecord>,
  done: (record: LifecycleRecord) => RouteOutput | Promise<RouteOutput>,
): Promise<RouteOutput> {
  try {
    return await done(await run());
  } catch (err) {
    if (err instanceof CommandRejectedError) return apiError(rejectionStatus(err.code), err.code, err.reason);
    if (isFleetError(err) && err.kind === "timeout") {
      return { status: 202, json: { sessionId, commandId, status: "pending" } };
    }
    throw err;
  }
}

export function lifecycleRoutes(ctx: RouteContext): AnyRouteSpec[] {
  const route = (method: "DELETE" | "POST", url: string, operationId: string, summary: string, op: Operation) =>
    defineRoute({
      method,
      url,
      operationId,
      summary,
      description:
        "Refused (409 `busy`) while a run or compaction is open: abort it first. Answers once the session is gone, with its lifecycle record (also on `fleet.evt.lifecycle.<id>`), or 202 when it has not finished within `timeoutMs` (it goes on).",
      tag: "sessions",
      access: "operate",
      usesNats: true,
      params: SessionParams,
      query: LifecycleQuery,
      responses: {
        200: { description: "Done: the lifecycle record", schema: LifecycleDone },
        202: { description: "Accepted or sent; not finished in time", schema: CommandPending },
        404: { description: "No such session" },
        409: { description: "A run is active (`busy`), or the session is being deleted (`conflict`)" },
      },
      async handler({ params, query, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        const commandId = query.commandId ?? newId();
        const timeoutMs = query.timeoutMs ?? ctx.commandTimeoutMs;
        return lifecycleOutcome(
          params.id,
          commandId,
          () => op(link.client, params.id, { by: requesterOf(principal), commandId, timeoutMs }),
          (record) => ({ status: 200, json: { sessionId: params.id, commandId, record } }),
        );
      },
    });
  return [
    route(
      "DELETE",
      "/v1/sessions/:id",
      "deleteSession",
      "Delete a session: its events, projection, blobs, workspace and budget records",
      (client, sid, opts) => client.deleteSession(sid, opts),
    ),
    route(
      "POST",
      "/v1/sessions/:id/archive",
      "archiveSession",
      "Archive a session (its whole log and pi JSONL), then delete it; `POST /v1/sessions {restoreFrom}` brings it back",
      (client, sid, opts) => client.archiveSession(sid, opts),
    ),
  ];
}
