// pi v3 JSONL: export a session, import one as a new session.
import { newId, newSessionId } from "@fleet/client";
import { importPiJsonl } from "@fleet/protocol";
import { CommandPending, ImportQuery, SessionCreated, SessionParams } from "../api-schemas.js";
import { apiError } from "../http/api-error.js";
import { TEXT_CONTENT_TYPES } from "../http/body-parsers.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import type { RouteContext } from "./route-context.js";
import { sessionCreation } from "./session-creation.js";

const JSONL = "application/jsonl";

export function exportImportRoutes(ctx: RouteContext): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "GET",
      url: "/v1/sessions/:id/export",
      operationId: "exportSession",
      summary: "The session as a pi v3 JSONL session file (from the session store)",
      tag: "sessions",
      access: "read",
      usesNats: true,
      params: SessionParams,
      responses: {
        200: { description: "pi v3 JSONL: a session header line, then one entry per line", contentType: JSONL },
        404: { description: "No such session" },
      },
      async handler({ params, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        const text = await link.client.export(params.id);
        return {
          status: 200,
          text,
          contentType: `${JSONL}; charset=utf-8`,
          headers: { "content-disposition": `attachment; filename="${params.id}.jsonl"` },
        };
      },
    }),
    defineRoute({
      method: "POST",
      url: "/v1/sessions/import",
      operationId: "importSession",
      summary: "Create a new session from a pi v3 JSONL session file",
      tag: "sessions",
      access: "operate",
      usesNats: true,
      query: ImportQuery,
      body: {
        contentTypes: TEXT_CONTENT_TYPES,
        description: "pi v3 JSONL text (a session header line, then entries)",
      },
      responses: {
        201: { description: "Imported (`command_accepted` is on the log)", schema: SessionCreated },
        202: { description: "Sent; the outcome has not arrived in time", schema: CommandPending },
        409: { description: "The session id is taken" },
      },
      async handler({ query, body, principal }) {
        const parsed = importPiJsonl(body as string);
        if (!parsed.ok) {
          const first = parsed.issues[0];
          const more = parsed.issues.length > 1 ? ` (and ${parsed.issues.length - 1} more problems)` : "";
          return apiError(400, "invalid", `not a pi v3 session file: line ${first?.line}: ${first?.message}${more}`);
        }
        const link = await ctx.links.forTenant(principal.tenant);
        const sessionId = query.sessionId ?? newSessionId();
        const commandId = query.commandId ?? newId();
        return sessionCreation(sessionId, commandId, () =>
          link.client.importSession(
            { entries: parsed.entries, leafId: parsed.leafId },
            { sessionId, commandId, timeoutMs: ctx.commandTimeoutMs },
          ),
        );
      },
    }),
  ];
}
