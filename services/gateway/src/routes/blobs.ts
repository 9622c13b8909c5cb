// `GET /v1/sessions/{id}/blob?name=`: an object of the session in `fleet_blobs` (content by
// reference, a tool's full output), for clients that resolve references over HTTP (the console).
import { OBJECT_STORES } from "@fleet/protocol";
import { z } from "zod";
import { SessionParams } from "../api-schemas.js";
import { apiError } from "../http/api-error.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import type { RouteContext } from "./route-context.js";

export const BlobQuery = z.object({
  /** The reference's `name`: `input/<session>/…` (an input part) or `tool-output/<session>/…`. */
  name: z.string().min(1).max(1024),
});

/** Does an object of `fleet_blobs` belong to the session (by the names Fleet gives them)? */
const ofSession = (name: string, sessionId: string) =>
  name.startsWith(`input/${sessionId}/`) || name.startsWith(`tool-output/${sessionId}/`);

export function blobRoutes(ctx: RouteContext): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "GET",
      url: "/v1/sessions/:id/blob",
      operationId: "readBlob",
      summary: "The bytes of an object the session's events refer to (a block's `blob`, a tool's `fullOutput`)",
      description:
        "Content by reference (PROTOCOL \"Large inputs\"): a text block's UTF-8 text, an image's bytes, a tool's full output. Always `application/octet-stream`; the reference's `mimeType` says what it is. Only objects named for this session (`input/<id>/…`, `tool-output/<id>/…`).",
      tag: "sessions",
      access: "read",
      usesNats: true,
      params: SessionParams,
      query: BlobQuery,
      responses: {
        200: { description: "The object's bytes", contentType: "application/octet-stream" },
        404: { description: "No such object for this session" },
      },
      async handler({ params, query, principal }) {
        if (!ofSession(query.name, params.id)) {
          return apiError(404, "not_found", `session ${params.id} has no object ${query.name}`);
        }
        const link = await ctx.links.forTenant(principal.tenant);
        const bytes = await link.client.readBlob({ bucket: OBJECT_STORES.blobs.name, name: query.name });
        if (!bytes) return apiError(404, "not_found", `session ${params.id} has no object ${query.name}`);
        return {
          status: 200,
          bytes,
          contentType: "application/octet-stream",
          // Objects never change once written.
          headers: { "cache-control": "private, max-age=86400, immutable" },
        };
      },
    }),
  ];
}
