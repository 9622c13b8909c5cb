import Anthropic, {
  APIError,
  APIUserAbortError,
  BadRequestError,
  InternalServerError,
  OverloadedError,
  RateLimitError,
} from "@anthropic-ai/sdk";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { listRunningServers } from "./cleanup-registry.js";
import {
  fakeContextOverflow,
  fakeHttpError,
  fakeOverloaded,
  fakeRateLimited,
  fakeReply,
  fakeStreamError,
  fakeText,
  fakeThinking,
  fakeToolUse,
} from "./fake-anthropic-builders.js";
import { type FakeAnthropic, startFakeAnthropic } from "./fake-anthropic-server.js";
import { statelessResponder } from "./fake-anthropic-stateless.js";

const MODEL = "claude-fake-1";
const fake: FakeAnthropic = await startFakeAnthropic();
const client = new Anthropic({ apiKey: "sk-test", baseURL: fake.url, maxRetries: 0 });
const ask = (text: string, signal?: AbortSignal) =>
  client.messages.stream(
    { model: MODEL, max_tokens: 1024, messages: [{ role: "user", content: text }] },
    signal === undefined ? {} : { signal },
  );

/** Resolves with the error `promise` rejects with; fails when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

beforeEach(() => {
  fake.reset();
});

afterAll(async () => {
  await fake.stop();
});

describe("testkit / fake Anthropic with the real SDK", () => {
  it("streams text deltas and reports stop reason and usage; the request is recorded", async () => {
    fake.script(
      fakeReply([fakeText("Hello, world!", ["Hel", "lo, ", "world!"])], {
        usage: { input_tokens: 42, output_tokens: 17, cache_read_input_tokens: 7, cache_creation_input_tokens: 3 },
      }),
    );
    const stream = ask("hi");
    const deltas: string[] = [];
    stream.on("text", (delta) => deltas.push(delta));
    const message = await stream.finalMessage();

    expect(deltas).toEqual(["Hel", "lo, ", "world!"]);
    expect(message.content).toEqual([{ type: "text", text: "Hello, world!", citations: null }]);
    expect(message.stop_reason).toBe("end_turn");
    expect(message.model).toBe(MODEL);
    expect(message.id).toBe("msg_fake_0");
    expect(message.usage).toMatchObject({
      input_tokens: 42,
      output_tokens: 17,
      cache_read_input_tokens: 7,
      cache_creation_input_tokens: 3,
    });
    expect(fake.requests).toHaveLength(1);
    const request = fake.requests[0]!;
    expect(request).toMatchObject({
      method: "POST",
      path: "/v1/messages",
      auth: "bearer",
      apiKey: "sk-test",
      stream: true,
    });
    expect(request.body?.messages).toEqual([{ role: "user", content: "hi" }]);
    expect(request.body?.max_tokens).toBe(1024);
    expect(request.headers["anthropic-version"]).toBe("2026-10-21");
    expect(request.headers.authorization).toBeUndefined();
    expect(await fake.waitForOutcome(0)).toBe("completed");
    expect(fake.pendingReplies()).toBe(0);
  });

  it("streams thinking deltas and the signature", async () => {
    fake.script(fakeReply([fakeThinking("Let me think.", "sig-abc", ["Let me", " think."]), fakeText("42")]));
    const stream = ask("meaning of life?");
    const thinking: string[] = [];
    const signatures: string[] = [];
    stream.on("thinking", (delta) => thinking.push(delta));
    stream.on("signature", (signature) => signatures.push(signature));
    const message = await stream.finalMessage();

    expect(thinking).toEqual(["Let me", " think."]);
    expect(signatures).toEqual(["sig-abc"]);
    expect(message.content).toEqual([
      { type: "thinking", thinking: "Let me think.", signature: "sig-abc" },
      { type: "text", text: "42", citations: null },
    ]);
  });

  it("streams a tool call as several input_json_delta chunks that assemble to the input", async () => {
    const input = { location: "Paris", units: "c", days: [1, 2, 3] };
    fake.script(fakeReply([fakeText("Checking."), fakeToolUse("get_weather", input, { id: "toolu_1" })]));
    const stream = ask("weather?");
    const partials: string[] = [];
    stream.on("inputJson", (partial) => partials.push(partial));
    const message = await stream.finalMessage();

    expect(partials.length).toBeGreaterThan(2);
    expect(partials.join("")).toBe(JSON.stringify(input));
    expect(message.stop_reason).toBe("tool_use");
    expect(message.content[1]).toEqual({
      type: "tool_use",
      id: "toolu_1",
      name: "get_weather",
      input,
      caller: { type: "direct" },
    });
  });

  it("lets a responder choose the reply from the request body", async () => {
    fake.respondWith((request) => {
      const last = request.body?.messages.at(-1) as { content: string };
      return fakeReply(`echo: ${last.content}`);
    });
    expect(await ask("one").finalText()).toBe("echo: one");
    expect(await ask("two").finalText()).toBe("echo: two");
    expect(fake.requests.map((r) => r.index)).toEqual([0, 1]);
  });

  it("turns HTTP 400 into BadRequestError with Anthropic's error body", async () => {
    fake.script(fakeHttpError(400, "invalid_request_error", "max_tokens: must be positive"));
    const error = await rejection(ask("x").finalMessage());
    expect(error).toBeInstanceOf(BadRequestError);
    const e = error as BadRequestError;
    expect(e.status).toBe(400);
    expect(e.apiMessage).toBe("max_tokens: must be positive");
    expect(e.error).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message: "max_tokens: must be positive" },
    });
    expect(e.requestID).toBe("req_fake_0");
  });

  it("answers a context overflow as Anthropic does: 400 invalid_request_error 'prompt is too long'", async () => {
    fake.script(fakeContextOverflow(213_462));
    const error = await rejection(ask("x").finalMessage());
    expect(error).toBeInstanceOf(BadRequestError);
    const e = error as BadRequestError;
    expect(e.status).toBe(400);
    expect(e.error).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message: "prompt is too long: 213462 tokens > 200000 maximum" },
    });
  });

  it("turns HTTP 429 into RateLimitError with the retry-after header", async () => {
    fake.script(fakeRateLimited(7));
    const error = await rejection(ask("x").finalMessage());
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).status).toBe(429);
    expect((error as RateLimitError).headers?.get("retry-after")).toBe("7");
  });

  it("turns HTTP 529 into OverloadedError", async () => {
    fake.script(fakeOverloaded());
    const error = await rejection(ask("x").finalMessage());
    expect(error).toBeInstanceOf(OverloadedError);
    expect((error as OverloadedError).type).toBe("overloaded_error");
  });

  it("turns a mid-stream SSE error event into an APIError without status", async () => {
    fake.script(fakeStreamError({ afterEvents: 4, content: [fakeText("partial answer", ["partial", " answer"])] }));
    const stream = ask("x");
    const deltas: string[] = [];
    stream.on("text", (delta) => deltas.push(delta));
    const error = await rejection(stream.finalMessage());

    expect(deltas).toEqual(["partial"]);
    expect(error).toBeInstanceOf(APIError);
    const e = error as APIError;
    expect(e.status).toBeUndefined();
    expect(e.error).toEqual({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
    expect(fake.requests[0]?.eventsWritten).toBe(4);
  });

  it("aborts a stalled stream with an AbortSignal; the fake sees the client close the connection", async () => {
    fake.script(fakeReply([fakeText("never finished", ["never", " finished"])], { stallAfterEvents: 4 }));
    const controller = new AbortController();
    const stream = ask("x", controller.signal);
    stream.on("text", () => controller.abort());
    const error = await rejection(stream.finalMessage());

    expect(error).toBeInstanceOf(APIUserAbortError);
    expect(stream.aborted).toBe(true);
    expect(await fake.waitForOutcome(0)).toBe("client_closed");
    expect(fake.requests[0]?.eventsWritten).toBe(4);
  });

  it("waits eventDelayMs between events", async () => {
    fake.script(fakeReply([fakeText("abc", ["a", "b", "c"])], { eventDelayMs: 20 }));
    const startedAt = performance.now();
    expect(await ask("x").finalText()).toBe("abc");
    // 9 events → 8 delays
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(8 * 20 - 5);
  });

  it("answers stream:false with a Message JSON", async () => {
    fake.script(fakeReply("A summary.", { usage: { input_tokens: 100, output_tokens: 3 } }));
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 256,
      messages: [{ role: "user", content: "summarise" }],
    });
    expect(message).toEqual({
      id: "msg_fake_0",
      type: "message",
      role: "assistant",
      model: MODEL,
      container: null,
      diagnostics: null,
      content: [{ type: "text", text: "A summary.", citations: null }],
      stop_reason: "end_turn",
      stop_sequence: null,
      stop_details: null,
      usage: {
        input_tokens: 100,
        output_tokens: 3,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        server_tool_use: null,
        service_tier: "standard",
        inference_geo: null,
        output_tokens_details: null,
        speed: null,
      },
    });
    expect(fake.requests[0]?.stream).toBe(false);
  });

  it("fails an unscripted request loudly with a 500", async () => {
    const error = await rejection(ask("x").finalMessage());
    expect(error).toBeInstanceOf(InternalServerError);
    expect((error as InternalServerError).apiMessage).toBe("fake-anthropic: no scripted reply for request #0");
  });

  it("accepts x-api-key, rejects a request without credentials with 401, and a bad body with 400", async () => {
    fake.script(fakeReply("ok"));
    const body = JSON.stringify({ model: MODEL, max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    const withKey = await fetch(`${fake.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": "sk-other", "content-type": "application/json" },
      body,
    });
    expect(withKey.status).toBe(200);
    expect(fake.requests[0]).toMatchObject({ auth: "x-api-key", apiKey: "sk-other" });
    expect(fake.requests[0]?.headers["x-api-key"]).toBeUndefined();

    const anonymous = await fetch(`${fake.url}/v1/messages`, { method: "POST", body });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({
      type: "error",
      error: { type: "authentication_error", message: "x-api-key or Authorization: Bearer header is required" },
    });

    const bad = await fetch(`${fake.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: "Bearer sk-test" },
      body: JSON.stringify({ model: MODEL }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      type: "error",
      error: {
        type: "invalid_request_error",
        message: "fake-anthropic: messages: Invalid input: expected array, received undefined",
      },
    });
    expect(fake.requests.map((r) => r.auth)).toEqual(["x-api-key", "none", "bearer"]);
  });

  it("stop() ends a stalled stream as server_closed and frees the port", async () => {
    const other = await startFakeAnthropic();
    other.script(fakeReply("stuck", { stallAfterEvents: 2 }));
    const otherClient = new Anthropic({ apiKey: "sk-test", baseURL: other.url, maxRetries: 0 });
    const stream = otherClient.messages.stream({
      model: MODEL,
      max_tokens: 5,
      messages: [{ role: "user", content: "x" }],
    });
    const failed = rejection(stream.finalMessage());
    await other.waitForRequest(0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await other.stop();

    expect(await other.waitForOutcome(0)).toBe("server_closed");
    expect(await failed).toBeInstanceOf(Error);
    await expect(fetch(`${other.url}/v1/messages`, { method: "POST" })).rejects.toThrow();
    expect(listRunningServers()).toEqual([`fake-anthropic :${fake.port}`]);
  });
});

describe("testkit / fake Anthropic, stateless mode", () => {
  const plan = {
    toolsFor: (prompt: string, idOf: (suffix: string) => string) => [
      { suffix: "b", name: "bash", input: { command: `echo ${prompt} >> ${idOf("b")}` } },
    ],
    finalText: (prompt: string) => `done: ${prompt}`,
  };

  it("answers a prompt with the same tool call (same id) every time, and tool results with the final text", async () => {
    fake.respondWith(statelessResponder(plan));
    const first = await ask("p1").finalMessage();
    const again = await ask("p1").finalMessage();
    const other = await ask("p2").finalMessage();
    const use = first.content[0];
    expect(first.stop_reason).toBe("tool_use");
    expect(use?.type === "tool_use" && use.id).toMatch(/^toolu_[0-9a-f]{24}_b$/);
    expect(use?.type === "tool_use" && use.input).toEqual({
      command: `echo p1 >> ${use?.type === "tool_use" && use.id}`,
    });
    expect(again.content).toEqual(first.content);
    expect(other.content).not.toEqual(first.content);

    const toolUseId = use?.type === "tool_use" ? use.id : "";
    const final = await client.messages
      .stream({
        model: MODEL,
        max_tokens: 1024,
        messages: [
          { role: "user", content: "p1" },
          { role: "assistant", content: first.content },
          { role: "user", content: [{ type: "tool_result", tool_use_id: toolUseId, content: "ok" }] },
        ],
      })
      .finalMessage();
    expect(final.stop_reason).toBe("end_turn");
    expect(final.content).toEqual([{ type: "text", text: "done: p1", citations: null }]);
  });
});
