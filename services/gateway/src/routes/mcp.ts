// `/v1/mcp`: Fleet as an MCP server over streamable HTTP (stateless: one server per POST).
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import { createFleetMcpServer } from "../mcp/fleet-mcp-server.js";
import type { RouteContext } from "./route-context.js";

/** A JSON-RPC message or batch (the SDK's transport validates it). */
const JsonRpcBody = z.union([z.looseObject({ jsonrpc: z.literal("2.0") }), z.array(z.unknown())]);

/** The gateway's error shape (with `Allow`): the endpoint keeps no MCP sessions and opens no standalone stream. */
const notAllowed = {
  status: 405,
  json: { error: { code: "method_not_allowed", message: "this MCP endpoint is stateless: POST only" } },
  headers: { allow: "POST" },
};

export function mcpRoutes(ctx: RouteContext, version: string): AnyRouteSpec[] {
  const common = {
    url: "/v1/mcp",
    tag: "mcp",
    access: "read" as const,
  };
  return [
    defineRoute({
      ...common,
      method: "POST",
      operationId: "mcp",
      summary: "MCP over streamable HTTP: run agents, read sessions, answer approvals",
      description:
        "Model Context Protocol (streamable HTTP, stateless) with the same bearer tokens: tools `run_agent {prompt, sessionId?, model?}` (answers the final assistant text; progress notifications while it runs), `list_sessions`, `read_session`, `list_approvals` and `answer_approval`. A read token gets the reading tools only.",
      usesNats: true,
      body: JsonRpcBody,
      responses: {
        200: {
          description: "The JSON-RPC answer, as an SSE stream (progress notifications, then the result)",
          contentType: "text/event-stream",
        },
        202: { description: "A notification or response was accepted" },
      },
      async handler({ body, principal, request, reply }) {
        const link = await ctx.links.forTenant(principal.tenant);
        const server = createFleetMcpServer({ link, principal, version, logger: ctx.logger });
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        reply.hijack();
        reply.raw.on("close", () => {
          void transport.close().catch(() => undefined);
          void server.close().catch(() => undefined);
        });
        await server.connect(transport);
        await transport.handleRequest(request.raw, reply.raw, body);
        return { hijacked: true };
      },
    }),
    ...(["GET", "DELETE"] as const).map((method) =>
      defineRoute({
        ...common,
        method,
        operationId: `mcp${method === "GET" ? "Stream" : "End"}`,
        summary: "Not used: the MCP endpoint keeps no sessions and opens no standalone stream",
        usesNats: false,
        responses: { 405: { description: "Only POST" } },
        handler: async () => notAllowed,
      }),
    ),
  ];
}
