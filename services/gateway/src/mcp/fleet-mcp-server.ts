// Fleet as an MCP server: the tools an MCP client gets at `/v1/mcp` (one server per request, stateless).

import { SessionId, ToolCallId } from "@fleet/protocol";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import { z } from "zod";
import type { Principal } from "../http/tokens-file.js";
import { pendingApprovals } from "../routes/approvals.js";
import { sessionStateOf } from "../session-state.js";
import type { TenantLink } from "../tenant-links.js";
import { runAgent } from "./run-agent.js";

const PAGE = 1000;

const json = (value: unknown): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(value, null, 2) }],
  structuredContent: value as Record<string, unknown>,
});
const failure = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true });

/**
 * The MCP server of one request, for `principal`'s tenant: `run_agent`, `list_sessions`,
 * `read_session`, `list_approvals` and `answer_approval`. A `read` token gets the three reading
 * tools only. Tool failures are results with `isError` (the message names the cause).
 */
export function createFleetMcpServer(opts: {
  link: TenantLink;
  principal: Principal;
  version: string;
  logger: Logger;
}): McpServer {
  const { link, principal } = opts;
  const client = link.client;
  const server = new McpServer(
    { name: "fleet", version: opts.version },
    {
      instructions:
        "Fleet runs LLM agent sessions. run_agent sends a prompt to a session (a new one unless sessionId is given) and answers with the agent's final text once its run ends.",
    },
  );
  const operate = principal.role === "operate";

  if (operate) {
    server.registerTool(
      "run_agent",
      {
        title: "Run a Fleet agent",
        description:
          "Sends `prompt` to a Fleet session (a new one unless `sessionId` is given; `model` is `provider/modelId` or an Anthropic model id) and answers with the agent's final assistant text when the run ends. Progress notifications report each tool call and turn while it runs; cancelling the request aborts the run.",
        inputSchema: {
          prompt: z.string().min(1),
          sessionId: SessionId.optional(),
          model: z.string().min(1).optional(),
        },
        annotations: { readOnlyHint: false, idempotentHint: false, openWorldHint: true },
      },
      async (args, extra) => {
        const token = extra._meta?.progressToken;
        const outcome = await runAgent(
          client,
          {
            prompt: args.prompt,
            ...(args.sessionId ? { sessionId: args.sessionId } : {}),
            ...(args.model ? { model: args.model } : {}),
          },
          {
            signal: extra.signal,
            progress: (step, message) => {
              if (token === undefined) return;
              void extra
                .sendNotification({
                  method: "notifications/progress",
                  params: { progressToken: token, progress: step, message },
                })
                .catch(() => undefined);
            },
          },
        );
        if (!outcome.ok) return { ...failure(outcome.error), structuredContent: { sessionId: outcome.sessionId } };
        const { ok: _ok, ...answer } = outcome;
        return {
          content: [{ type: "text", text: outcome.text }],
          structuredContent: answer,
          ...(outcome.stopReason === "error" || outcome.stopReason === "aborted" ? { isError: true } : {}),
        };
      },
    );
    server.registerTool(
      "answer_approval",
      {
        title: "Approve or deny a tool call",
        description:
          "Decides a tool call waiting for approval (see list_approvals): `approve: true` runs it, false denies it with `reason`.",
        inputSchema: {
          sessionId: SessionId,
          toolCallId: ToolCallId,
          approve: z.boolean(),
          reason: z.string().optional(),
        },
        annotations: { readOnlyHint: false, idempotentHint: true },
      },
      async (args) => {
        const outcome = await client.outcomeOf(
          args.sessionId,
          args.approve
            ? { type: "approve_tool_call", toolCallId: args.toolCallId }
            : { type: "deny_tool_call", toolCallId: args.toolCallId, ...(args.reason ? { reason: args.reason } : {}) },
        );
        if (outcome.event.type === "command_rejected") {
          return failure(`refused (${outcome.event.code}): ${outcome.event.reason}`);
        }
        return json({
          sessionId: args.sessionId,
          toolCallId: args.toolCallId,
          approved: args.approve,
          seq: outcome.seq,
        });
      },
    );
  }

  server.registerTool(
    "list_sessions",
    {
      title: "List Fleet sessions",
      description: "A page of the tenant's sessions (id, name, status, seq, updatedAt); pass `cursor` for the next.",
      inputSchema: { limit: z.number().int().min(1).max(PAGE).optional(), cursor: z.string().optional() },
      annotations: { readOnlyHint: true },
    },
    async (args) =>
      json(
        await client.listSessions({
          ...(args.limit !== undefined ? { limit: args.limit } : {}),
          ...(args.cursor !== undefined ? { cursor: args.cursor } : {}),
        }),
      ),
  );
  server.registerTool(
    "read_session",
    {
      title: "Read a Fleet session",
      description: "A session's folded state: status, model, queues, transcript and spend.",
      inputSchema: { sessionId: SessionId },
      annotations: { readOnlyHint: true },
    },
    async (args) => {
      if ((await client.lastSeq(args.sessionId)) === 0) return failure(`session ${args.sessionId} not found`);
      const view = await link.views.current(args.sessionId);
      return json(sessionStateOf(args.sessionId, view, view.spend));
    },
  );
  server.registerTool(
    "list_approvals",
    {
      title: "Pending tool approvals",
      description:
        "Tool calls waiting for a person's decision, in running sessions (or in `sessionId`); decide with answer_approval.",
      inputSchema: { sessionId: SessionId.optional() },
      annotations: { readOnlyHint: true },
    },
    async (args) => json({ approvals: await pendingApprovals(link, args.sessionId) }),
  );
  return server;
}
