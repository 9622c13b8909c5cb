// Sub-agents seen from outside (PROTOCOL "Sub-agents") against the real stack (nats-server,
// redis-server, loop, store, tool runner, gateway; only the LLM is faked): an approval asked inside a
// child is listed from its parent and answered there; the parent's children over HTTP, the SDK and
// the CLI, with status and spend.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AGENT_TOOL_NAME, childSessionId } from "@fleet/protocol";
import { fakeReply, fakeToolUse, type RecordedRequest } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, fleetCliOf, type GatewayStack, startGatewayStack, waitIdle } from "./support.js";

let stack: GatewayStack;
let dir: string;

beforeAll(async () => {
  stack = await startGatewayStack({
    approvalTools: ["write"],
    subAgents: { maxDepth: 3, maxFanOut: 8, closePolicy: "terminate", timeoutMs: 60_000, progressMs: 100 },
  });
  dir = mkdtempSync(join(tmpdir(), "fleet-sub-agents-"));
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const text = (r: RecordedRequest) => JSON.stringify(r.body?.messages ?? []);
/** The session's task: its first user message. */
const task = (r: RecordedRequest) => JSON.stringify(r.body?.messages[0] ?? null);

describe("gateway / sub-agents", () => {
  it("a child's approval is listed from its parent and decided there; the children route shows it done", async () => {
    const P = "sub-gw-parent";
    const child = childSessionId(P, "toolu_kid");
    // Parent: one agent call, then a final answer. Child: a write (needs approval), then its answer.
    stack.fake.respondWith((r) => {
      const sent = text(r);
      if (task(r).includes("write notes")) {
        return sent.includes("tool_result")
          ? fakeReply("notes written", { usage: { input_tokens: 40, output_tokens: 10 } })
          : fakeReply([fakeToolUse("write", { path: "kid.txt", content: "hi\n" }, { id: "toolu_write" })], {
              usage: { input_tokens: 30, output_tokens: 10 },
            });
      }
      return sent.includes("tool_result")
        ? fakeReply("parent done")
        : fakeReply([
            fakeToolUse(AGENT_TOOL_NAME, { prompt: "write notes", description: "notes" }, { id: "toolu_kid" }),
          ]);
    });
    const base = stack.gateway.url;
    expect(
      (await call(base, "POST", `/v1/sessions/${P}/commands`, { body: { type: "prompt", text: "delegate" } })).status,
    ).toBe(200);

    await expect
      .poll(
        async () =>
          (await call(base, "GET", `/v1/approvals?sessionId=${P}&descendants=true`)).body.approvals as {
            sessionId: string;
            toolCallId: string;
          }[],
        { timeout: 20_000 },
      )
      .toEqual([expect.objectContaining({ sessionId: child, toolCallId: "toolu_write", toolName: "write" })]);
    // Without `descendants` the parent has none of its own.
    expect((await call(base, "GET", `/v1/approvals?sessionId=${P}`)).body.approvals).toEqual([]);
    // The SDK sees the same.
    expect((await stack.client.approvalsWithDescendants(P)).map((a) => a.sessionId)).toEqual([child]);
    const running = await call(base, "GET", `/v1/sessions/${P}/children`);
    expect(running.body.children).toEqual([
      expect.objectContaining({ sessionId: child, toolCallId: "toolu_kid", description: "notes", status: "running" }),
    ]);

    // Decided on the child, as the item says.
    const approved = await call(base, "POST", `/v1/sessions/${child}/commands`, {
      body: { type: "approve_tool_call", toolCallId: "toolu_write" },
    });
    expect(approved.status).toBe(200);
    await waitIdle(stack.client, P, 4);
    const parent = await stack.client.replay(P);
    const last = parent.agent.messages.at(-1);
    expect(last?.role === "assistant" && JSON.stringify(last.content)).toContain("parent done");
    const result = parent.agent.messages.find((m) => m.role === "toolResult");
    expect(result?.role === "toolResult" && JSON.stringify(result.content)).toContain("notes written");

    const done = await call(base, "GET", `/v1/sessions/${P}/children`);
    const [kid] = done.body.children as { status: string; spend: { totalTokens: number } }[];
    expect(kid?.status).toBe("idle");
    expect(kid?.spend.totalTokens).toBe(90);
    // The parent's spend holds the child's.
    expect(parent.spend.session.totalTokens).toBeGreaterThanOrEqual(90);
    expect((await stack.client.children(P)).map((c) => [c.sessionId, c.status])).toEqual([[child, "idle"]]);

    const cli = await fleetCliOf(stack, dir)(["tree", P, "--children"]);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain(child);
    expect(cli.stdout).toContain("idle");
  }, 90_000);
});
