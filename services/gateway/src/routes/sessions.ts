// Sessions: list, create or fork, folded state, tree.
import { newId, newSessionId } from "@fleet/client";
import {
  CommandPending,
  CreateSessionBody,
  ListSessionsQuery,
  SessionCreated,
  SessionList,
  SessionParams,
  SessionTreeBody,
} from "../api-schemas.js";
import { apiError } from "../http/api-error.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import { SessionState, sessionStateOf } from "../session-state.js";
import { lifecycleOutcome, requesterOf } from "./lifecycle.js";
import type { RouteContext } from "./route-context.js";
import { sessionCreation } from "./session-creation.js";

export function sessionRoutes(ctx: RouteContext): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "GET",
      url: "/v1/sessions",
      operationId: "listSessions",
      summary:
        "List sessions with status, seq and name, paged (from the session store); `q` searches ids, names and labels by prefix, `status=running` lists open runs",
      tag: "sessions",
      access: "read",
      usesNats: true,
      query: ListSessionsQuery,
      responses: { 200: { description: "A page of sessions; pass `cursor` for the next", schema: SessionList } },
      async handler({ query, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        const q = query.q?.trim();
        const paging = {
          ...(query.limit !== undefined ? { limit: query.limit } : {}),
          ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
        };
        if (q && query.status !== undefined) {
          return apiError(400, "invalid", "q and status cannot be combined: search, or list the running sessions");
        }
        if (q) {
          const { sessions, cursor } = await link.client.searchSessions(q, paging);
          return { status: 200, json: cursor === undefined ? { sessions } : { sessions, cursor } };
        }
        if (query.status === "running") {
          const { sessions, cursor } = await link.client.listRunning(paging);
          return { status: 200, json: cursor === undefined ? { sessions } : { sessions, cursor } };
        }
        const page = await link.client.listSessions(paging);
        return { status: 200, json: page };
      },
    }),
    defineRoute({
      method: "POST",
      url: "/v1/sessions",
      operationId: "createSession",
      summary:
        "Create a session, fork one (`forkFrom`), replay one with overrides (`replayOf`), or restore an archived one (`restoreFrom`)",
      tag: "sessions",
      access: "operate",
      usesNats: true,
      body: CreateSessionBody,
      responses: {
        201: { description: "Created (`command_accepted` is on the log)", schema: SessionCreated },
        202: { description: "Sent; the outcome has not arrived in time", schema: CommandPending },
        400: { description: "`replayOf` with `config` or `forkFrom`, or nothing to replay" },
        404: {
          description: "The fork or replay source or entry does not exist, or there is no archive to restore",
        },
        409: { description: "The session already exists" },
      },
      async handler({ body, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        const commandId = body.commandId ?? newId();
        if (body.restoreFrom !== undefined) {
          const sessionId = body.restoreFrom;
          if (body.sessionId !== undefined && body.sessionId !== sessionId) {
            return apiError(400, "invalid", "a restored session keeps its id: sessionId must equal restoreFrom");
          }
          if (
            body.config !== undefined ||
            body.forkFrom !== undefined ||
            body.replayOf !== undefined ||
            body.agent !== undefined
          ) {
            return apiError(
              400,
              "invalid",
              "restoreFrom takes no config, forkFrom, replayOf or agent: the session comes back as it was",
            );
          }
          return lifecycleOutcome(
            sessionId,
            commandId,
            () =>
              link.client.restoreSession(sessionId, {
                by: requesterOf(principal),
                commandId,
                timeoutMs: ctx.commandTimeoutMs,
              }),
            async (record) => ({
              status: 201,
              json: { sessionId, commandId, seq: await link.client.lastSeq(sessionId), record },
            }),
          );
        }
        const sessionId = body.sessionId ?? newSessionId();
        if (body.replayOf !== undefined) {
          if (body.config !== undefined || body.forkFrom !== undefined) {
            return apiError(400, "invalid", "replayOf takes no config or forkFrom: overrides go in replayOf.overrides");
          }
          const { sessionId: source, ...replay } = body.replayOf;
          return sessionCreation(sessionId, commandId, () =>
            link.client.replayWith(source, { ...replay, sessionId, commandId, timeoutMs: ctx.commandTimeoutMs }),
          );
        }
        return sessionCreation(sessionId, commandId, () =>
          link.client.createSession(body.config ?? {}, {
            sessionId,
            commandId,
            timeoutMs: ctx.commandTimeoutMs,
            ...(body.forkFrom ? { forkFrom: body.forkFrom } : {}),
            ...(body.agent !== undefined ? { agent: body.agent } : {}),
          }),
        );
      },
    }),
    defineRoute({
      method: "GET",
      url: "/v1/sessions/:id",
      operationId: "getSession",
      summary: "The folded state (model, queues, status, seq) and the context at the leaf",
      description:
        "Folds the session's log with the protocol's reducers. A client folding the SSE events of the session gets the same value.",
      tag: "sessions",
      access: "read",
      usesNats: true,
      params: SessionParams,
      responses: {
        200: { description: "The session as of `seq`", schema: SessionState },
        404: { description: "No such session" },
      },
      async handler({ params, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        const view = await link.views.current(params.id);
        if (view.seq === 0 || view.tree.sessionId === null) {
          return apiError(404, "not_found", `session ${params.id} does not exist`);
        }
        return { status: 200, json: sessionStateOf(params.id, view, view.spend) };
      },
    }),
    defineRoute({
      method: "GET",
      url: "/v1/sessions/:id/tree",
      operationId: "getSessionTree",
      summary: "The session tree: every entry, the leaf and the labels (from the session store)",
      tag: "sessions",
      access: "read",
      usesNats: true,
      params: SessionParams,
      responses: {
        200: { description: "The tree", schema: SessionTreeBody },
        404: { description: "No such session" },
      },
      async handler({ params, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        return { status: 200, json: await link.client.getTree(params.id) };
      },
    }),
  ];
}
