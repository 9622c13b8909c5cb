// A client's span ties to the run it starts through the gateway: the W3C `traceparent` request header
// is recorded on the command's acceptance, the spans derived from the log are its children, and the
// LLM requests the run sends carry the context of their own `chat` spans.
import { tokenTable } from "@fleet/gateway";
import { derivedTraceId, type TraceSpan } from "@fleet/protocol";
import { fakeReply, fakeToolUse } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type GatewayStack, startGatewayStack, waitIdle } from "../gateway/support.js";

const TOKEN = "operate-token-0123456789";
const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";

let stack: GatewayStack;

beforeAll(async () => {
  stack = await startGatewayStack({
    gateway: {
      tokens: tokenTable({ tokens: [{ token: TOKEN, tenant: "acme", role: "operate" }], tenants: {} }),
      tenant: "acme",
    },
  });
}, 60_000);
afterAll(async () => {
  await stack?.stop();
});

const prompt = (sessionId: string, text: string, headers: Record<string, string>) =>
  call(stack.gateway.url, "POST", `/v1/sessions/${sessionId}/commands`, {
    token: TOKEN,
    body: { type: "prompt", text },
    headers,
  });

const chats = (spans: TraceSpan[]) =>
  spans.filter((s) => s.name.startsWith("chat ")).sort((a, b) => a.startMs - b.startMs);

describe("traces / trace context through the gateway", () => {
  it("makes the run a child of the client's span, and sends each chat span's context to the provider", async () => {
    stack.fake.reset();
    stack.fake.script(fakeReply([fakeToolUse("ls", { path: "." })]), fakeReply("Listed."));
    const answer = await prompt("gw-traced", "list the files", {
      traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
      tracestate: "acme=7",
    });
    expect(answer.status).toBe(200);
    expect(answer.body.event).toMatchObject({
      type: "command_accepted",
      trace: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: "acme=7" },
    });
    await waitIdle(stack.client, "gw-traced", 4);

    const spans = await stack.client.trace("gw-traced");
    const root = spans.find((s) => s.name.startsWith("invoke_agent"))!;
    expect(root.traceId).toBe(CLIENT_TRACE);
    expect(root.parentSpanId).toBe(CLIENT_SPAN);
    expect(spans.every((s) => s.traceId === CLIENT_TRACE && s.traceState === "acme=7" && !s.open)).toBe(true);
    expect(spans.map((s) => s.name).sort()).toEqual([
      "chat test-model",
      "chat test-model",
      "execute_tool ls",
      "invoke_agent fleet",
    ]);

    const requests = stack.fake.requests;
    expect(requests).toHaveLength(2);
    expect(requests.map((r) => r.headers.traceparent)).toEqual(
      chats(spans).map((s) => `00-${CLIENT_TRACE}-${s.spanId}-01`),
    );
    expect(requests.every((r) => r.headers.tracestate === "acme=7")).toBe(true);
  });

  it("ignores an invalid traceparent header: the run gets a trace id derived from its run id", async () => {
    stack.fake.reset();
    stack.fake.script(fakeReply("Hello."));
    const answer = await prompt("gw-untraced", "hi", { traceparent: "00-not-a-trace-01", tracestate: "acme=7" });
    expect(answer.status).toBe(200);
    expect(answer.body.event.trace).toBeUndefined();
    await waitIdle(stack.client, "gw-untraced", 2);
    const spans = await stack.client.trace("gw-untraced");
    const root = spans.find((s) => s.name.startsWith("invoke_agent"))!;
    expect(root.traceId).toBe(derivedTraceId(root.runId));
    expect(root.parentSpanId).toBeUndefined();
    expect(stack.fake.requests[0]!.headers.traceparent).toBe(`00-${root.traceId}-${chats(spans)[0]!.spanId}-01`);
    expect(stack.fake.requests[0]!.headers.tracestate).toBeUndefined();
  });
});
