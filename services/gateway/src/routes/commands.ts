// `POST /v1/sessions/{id}/commands`: publish one command, answer with its outcome event.
import { isFleetError, newId, type CommandBody as SdkCommandBody } from "@fleet/client";
import { traceFieldsOf } from "@fleet/protocol";
import { CommandBody, CommandOutcome, CommandPending, CommandQuery, SessionParams } from "../api-schemas.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import type { RouteContext } from "./route-context.js";

export function commandRoutes(ctx: RouteContext): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "POST",
      url: "/v1/sessions/:id/commands",
      operationId: "sendCommand",
      summary: "Send one command; answers with its outcome event once it is on the log",
      description:
        "The body is a protocol command without `sessionId`: `{type, commandId?, …}`. The answer is 200 with the outcome event (`command_accepted` or `command_rejected`: a rejection is an outcome, not an HTTP error), or 202 when the outcome has not arrived in time. Re-sending a `commandId` never runs the command twice; within the stream's dedup window (2 min) it answers with the first outcome. A W3C `traceparent` (and `tracestate`) request header, or the same body fields, makes the run the command starts a child of the caller's span in the traces derived from the log; an invalid header is ignored.",
      tag: "commands",
      access: "operate",
      usesNats: true,
      params: SessionParams,
      query: CommandQuery,
      body: CommandBody,
      responses: {
        200: { description: "The outcome event and its stream sequence", schema: CommandOutcome },
        202: { description: "Published; the outcome has not arrived in time", schema: CommandPending },
      },
      async handler({ params, query, body, principal, request }) {
        const link = await ctx.links.forTenant(principal.tenant);
        const { commandId = newId(), ...command } = body as { commandId?: string } & SdkCommandBody;
        // W3C trace context: the body's fields, else the request's `traceparent`/`tracestate` headers (change 46).
        const header = (name: string) => {
          const value = request.headers[name];
          return Array.isArray(value) ? value[0] : value;
        };
        const trace = "traceparent" in command ? {} : traceFieldsOf(header("traceparent"), header("tracestate"));
        try {
          const outcome = await link.client.outcomeOf(params.id, command as SdkCommandBody, {
            commandId,
            ...trace,
            timeoutMs: query.timeoutMs ?? ctx.commandTimeoutMs,
          });
          ctx.metrics.commands.inc({ type: command.type, outcome: outcome.event.type });
          return { status: 200, json: outcome };
        } catch (err) {
          if (isFleetError(err) && err.kind === "timeout") {
            ctx.metrics.commands.inc({ type: command.type, outcome: "pending" });
            return { status: 202, json: { sessionId: params.id, commandId, status: "pending" } };
          }
          throw err;
        }
      },
    }),
  ];
}
