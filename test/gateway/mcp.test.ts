// Fleet as an MCP server: the SDK's own client drives `/v1/mcp` on the real stack (loop, tool
// runner, store, NATS, Redis; the LLM is the fake Anthropic API), with the gateway's bearer tokens.
import { fakeReply, fakeText, fakeToolUse } from "@fleet/testkit";
import { createMcpServerConnection, openSandbox } from "@fleet/tools";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acmeTokens, type GatewayStack, silent, startGatewayStack } from "./support.js";

const OPERATE = "mcp-operate-token-0123456789";
const READ = "mcp-read-token-0123456789abcd";
const tokens = acmeTokens(OPERATE, READ);

let stack: GatewayStack;
const clients: Client[] = [];

async function mcpClient(token: string | undefined): Promise<Client> {
  const client = new Client({ name: "mcp-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.gateway.url}/v1/mcp`), {
    requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const textOf = (result: CallToolResult) =>
  result.content.map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join("\n");

type Approval = { sessionId: string; toolCallId: string; toolName: string };

/**
 * Starts `run_agent` on `sessionId` with the fake model asking for `write` (which needs approval),
 * and resolves once list_approvals shows the call: the run's result promise and the approvals.
 */
async function runWaitingForApproval(client: Client, sessionId: string, toolCallId: string, finalText: string) {
  stack.fake.script(
    fakeReply([
      fakeText("Writing."),
      fakeToolUse("write", { path: `${sessionId}.txt`, content: "x\n" }, { id: toolCallId }),
    ]),
    fakeReply(finalText),
  );
  const run = client.callTool({ name: "run_agent", arguments: { prompt: "write it", sessionId } }, undefined, {
    timeout: 60_000,
  }) as Promise<CallToolResult>;
  let approvals: Approval[] = [];
  await expect
    .poll(
      async () => {
        const listed = (await client.callTool({ name: "list_approvals", arguments: { sessionId } })) as CallToolResult;
        approvals = (listed.structuredContent as { approvals: Approval[] }).approvals;
        return approvals.length;
      },
      { timeout: 30_000 },
    )
    .toBe(1);
  return { run, approvals };
}

beforeAll(async () => {
  stack = await startGatewayStack({ gateway: { tokens, tenant: "acme" }, approvalTools: ["write"] });
}, 60_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await stack?.stop();
});

describe("gateway / MCP server at /v1/mcp", () => {
  it("refuses a client without a token, and gives a read token the reading tools only", async () => {
    await expect(mcpClient(undefined)).rejects.toThrow(/401|unauthorized/i);
    const names = async (token: string) => (await (await mcpClient(token)).listTools()).tools.map((t) => t.name).sort();
    expect(await names(OPERATE)).toEqual([
      "answer_approval",
      "list_approvals",
      "list_sessions",
      "read_session",
      "run_agent",
    ]);
    expect(await names(READ)).toEqual(["list_approvals", "list_sessions", "read_session"]);
  });

  it("runs an agent turn with tools and answers its final text, with progress while it runs", async () => {
    stack.fake.script(
      fakeReply([fakeText("Looking."), fakeToolUse("ls", { path: "." }, { id: "toolu_mcp_ls" })]),
      fakeReply("The workspace is listed."),
    );
    const client = await mcpClient(OPERATE);
    const progress: { progress: number; message?: string }[] = [];
    const result = (await client.callTool(
      { name: "run_agent", arguments: { prompt: "list the workspace", sessionId: "s-mcp-run" } },
      undefined,
      { onprogress: (p) => progress.push(p), timeout: 60_000 },
    )) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe("The workspace is listed.");
    expect(result.structuredContent).toEqual({
      sessionId: "s-mcp-run",
      text: "The workspace is listed.",
      stopReason: "stop",
    });
    // One notification per tool start and per turn end (the SDK may drop the last, sent with the result).
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress[0]).toMatchObject({ progress: 1, message: "running ls" });
    expect(progress[1]).toMatchObject({ progress: 2, message: "turn finished" });

    const sessions = (await client.callTool({ name: "list_sessions", arguments: {} })) as CallToolResult;
    expect(sessions.structuredContent).toMatchObject({
      sessions: expect.arrayContaining([expect.objectContaining({ sessionId: "s-mcp-run" })]),
    });
    const reader = await mcpClient(READ);
    const state = (await reader.callTool({
      name: "read_session",
      arguments: { sessionId: "s-mcp-run" },
    })) as CallToolResult;
    expect(state.structuredContent).toMatchObject({ sessionId: "s-mcp-run", status: "idle" });
    expect(JSON.stringify(state.structuredContent)).toContain("The workspace is listed.");
    const missing = (await reader.callTool({
      name: "read_session",
      arguments: { sessionId: "s-mcp-none" },
    })) as CallToolResult;
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toBe("session s-mcp-none not found");
  });

  it("answers a tool approval while run_agent waits, which then ends with the final text", async () => {
    const client = await mcpClient(OPERATE);
    const { run, approvals } = await runWaitingForApproval(
      client,
      "s-mcp-appr",
      "toolu_mcp_w",
      "Written after approval.",
    );
    expect(approvals[0]).toMatchObject({ sessionId: "s-mcp-appr", toolName: "write", toolCallId: "toolu_mcp_w" });
    const answered = (await client.callTool({
      name: "answer_approval",
      arguments: { sessionId: "s-mcp-appr", toolCallId: "toolu_mcp_w", approve: true },
    })) as CallToolResult;
    expect(answered.isError).toBeFalsy();
    expect(textOf(await run)).toBe("Written after approval.");
  });

  it("answers run_agent on a busy session with an error result naming the refusal", async () => {
    const client = await mcpClient(OPERATE);
    const { run } = await runWaitingForApproval(client, "s-mcp-busy", "toolu_mcp_busy", "Done.");
    const second = (await client.callTool({
      name: "run_agent",
      arguments: { prompt: "again", sessionId: "s-mcp-busy" },
    })) as CallToolResult;
    expect(second.isError).toBe(true);
    expect(textOf(second)).toMatch(/^prompt refused \(busy\)/);
    const denied = (await client.callTool({
      name: "answer_approval",
      arguments: { sessionId: "s-mcp-busy", toolCallId: "toolu_mcp_busy", approve: false, reason: "not now" },
    })) as CallToolResult;
    expect(denied.structuredContent).toMatchObject({ approved: false });
    expect(textOf(await run)).toBe("Done.");
  });

  it("aborts the run when the client closes the request's stream", async () => {
    stack.fake.script(fakeReply("This answer never ends.", { stallAfterEvents: 3 }));
    const reader = await mcpClient(READ);
    const status = async () => {
      const state = (await reader.callTool({
        name: "read_session",
        arguments: { sessionId: "s-mcp-cancel" },
      })) as CallToolResult;
      return (state.structuredContent as { status?: string } | undefined)?.status;
    };
    // A stateless request cannot be reached by a later notifications/cancelled: closing it is the cancel.
    const controller = new AbortController();
    const response = await fetch(`${stack.gateway.url}/v1/mcp`, {
      method: "POST",
      signal: controller.signal,
      headers: {
        authorization: `Bearer ${OPERATE}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "run_agent", arguments: { prompt: "talk forever", sessionId: "s-mcp-cancel" } },
      }),
    });
    expect(response.status).toBe(200);
    await expect.poll(status, { timeout: 30_000 }).toBe("running");
    controller.abort();
    await expect.poll(status, { timeout: 30_000 }).toBe("idle");
    const live = await stack.client.state("s-mcp-cancel");
    const last = live.view.agent.messages.at(-1) as { role: string; stopReason?: string };
    live.close();
    expect(last).toMatchObject({ role: "assistant", stopReason: "aborted" });
  });

  it("is itself an MCP server a Fleet tool runner can serve: headers carry the token", async () => {
    const connect = async (name: string, headers: Record<string, string>) => {
      const conn = createMcpServerConnection({
        name,
        entry: { url: `${stack.gateway.url}/v1/mcp`, headers },
        sandbox: await openSandbox(),
        workDir: stack.workspace,
        logger: silent,
        backoff: { baseMs: 60_000, capMs: 60_000 },
        onToolsChanged: () => undefined,
      });
      await conn.start();
      return conn;
    };
    const reading = await connect("fleet", { authorization: `Bearer ${READ}` });
    const unauthenticated = await connect("anon", {});
    try {
      expect(reading.status().state).toBe("up");
      expect(
        reading
          .tools()
          .map((t) => t.name)
          .sort(),
      ).toEqual(["mcp__fleet__list_approvals", "mcp__fleet__list_sessions", "mcp__fleet__read_session"]);
      expect(reading.tools().every((t) => t.retry === "safe")).toBe(true);
      expect(unauthenticated.status()).toMatchObject({
        state: "down",
        reason: expect.stringMatching(/401|unauthorized/i),
      });
      expect(unauthenticated.tools()).toEqual([]);
    } finally {
      await reading.stop();
      await unauthenticated.stop();
    }
  });
});
