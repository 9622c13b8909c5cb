import { fakeHttpError, fakeRateLimited, fakeReply, fakeText, fakeToolUse } from "@fleet/testkit";
import { describe, expect, it } from "vitest";
import { notation } from "../support/loop-harness.js";
import { useAnthropicWorker } from "../support/worker-world.js";

const w = useAnthropicWorker({ maxRetries: 1, coalesceMs: 25 });

const ended = (ev: { type: string }[]) => ev.some((e) => e.type === "agent_end");

describe("loop service / Anthropic through the real SDK", () => {
  it("streams a reply; the request carries the system prompt and the user turn; usage is recorded", async () => {
    w.fake.reset();
    w.fake.script(
      fakeReply([fakeText("Hello from the fake Claude", ["Hello ", "from ", "the ", "fake ", "Claude"])], {
        usage: { input_tokens: 12, output_tokens: 7 },
      }),
    );
    await w.cmd.send("anth-1", { type: "prompt", text: "hi there" });
    const events = await w.cmd.waitFor("anth-1", ended);
    expect(notation(events).slice(-5)).toEqual([
      "me:user",
      "ms:assistant",
      "me:assistant(stop)",
      "turn_end",
      "agent_end",
    ]);
    const req = w.fake.requests[0];
    expect(req?.auth).toBe("bearer");
    expect(JSON.stringify(req?.body?.system)).toContain("You are a test agent.");
    expect(JSON.stringify(req?.body?.messages)).toContain("hi there");
    const end = events.filter((e) => e.type === "message_end").at(-1);
    const msg = end?.type === "message_end" && end.message.role === "assistant" ? end.message : undefined;
    expect(msg?.content).toEqual([{ type: "text", text: "Hello from the fake Claude" }]);
    expect(msg?.usage.input).toBe(12);
    expect(msg?.usage.output).toBe(7);
    // Coalescing: fewer message_update events than deltas, and every delta is kept.
    const updates = events.filter((e) => e.type === "message_update");
    const deltas = updates.flatMap((e) => (e.type === "message_update" ? e.deltas : []));
    expect(
      deltas
        .filter((d) => d.type === "text_delta")
        .map((d) => (d.type === "text_delta" ? d.delta : ""))
        .join(""),
    ).toBe("Hello from the fake Claude");
  });

  it("a 429 is retried by the SDK and then succeeds", async () => {
    w.fake.reset();
    w.fake.script(fakeRateLimited(0), fakeReply("after the retry"));
    await w.cmd.send("anth-2", { type: "prompt", text: "go" });
    const events = await w.cmd.waitFor("anth-2", ended);
    const end = events.filter((e) => e.type === "message_end").at(-1);
    expect(end?.type === "message_end" && end.message.role === "assistant" && end.message.stopReason).toBe("stop");
    expect(w.fake.requests).toHaveLength(2);
  });

  it("a 400 becomes stopReason error with the API's message, and the run ends", async () => {
    w.fake.reset();
    w.fake.script(fakeHttpError(400, "invalid_request_error", "messages: text content blocks must be non-empty"));
    await w.cmd.send("anth-3", { type: "prompt", text: "go" });
    const events = await w.cmd.waitFor("anth-3", ended);
    const end = events.filter((e) => e.type === "message_end").at(-1);
    const msg = end?.type === "message_end" && end.message.role === "assistant" ? end.message : undefined;
    expect(msg?.stopReason).toBe("error");
    expect(msg?.errorMessage).toContain("messages: text content blocks must be non-empty");
    expect(msg?.errorMessage).toContain("400");
    expect(notation(events).slice(-3)).toEqual(["me:assistant(error)", "turn_end", "agent_end"]);
  });

  it("a tool_use for an unregistered tool yields pi's not-found result and a second request", async () => {
    w.fake.reset();
    w.fake.script(
      fakeReply([fakeToolUse("read", { path: "a.txt" }, { id: "toolu_01" })], { stopReason: "tool_use" }),
      fakeReply("ok"),
    );
    await w.cmd.send("anth-4", { type: "prompt", text: "read it" });
    const events = await w.cmd.waitFor("anth-4", ended);
    const end = events.find((e) => e.type === "tool_execution_end");
    expect(end?.type === "tool_execution_end" && (end.result.content[0] as { text: string }).text).toBe(
      "Tool read not found",
    );
    const second = w.fake.requests[1]?.body?.messages ?? [];
    expect(JSON.stringify(second)).toContain("tool_result");
    expect(JSON.stringify(second)).toContain("Tool read not found");
  });
});
