// Named hook servers (change 53) against a real nats-server and the real Anthropic SDK on the fake
// server: each hook served remotely changes what the model is sent, a changed answer is logged as
// `hook_decision`, two servers compose in the worker's order, and a failure fails closed.
import { AGENT_EVENT_TYPES, type FleetEvent } from "@fleet/protocol";
import { fakeReply, fakeText, fakeToolUse, type RecordedRequest } from "@fleet/testkit";
import type { Subscription } from "@nats-io/transport-node";
import { afterEach, describe, expect, it } from "vitest";
import { notation } from "../support/loop-harness.js";
import { useAnthropicWorker } from "../support/worker-world.js";

const w = useAnthropicWorker({ hookServers: ["first", "second"] });
const subs: Subscription[] = [];

afterEach(() => {
  for (const s of subs.splice(0)) s.unsubscribe();
  w.fake.reset();
});

interface HookRequest {
  sessionId: string;
  runId?: string;
  turn: number;
  hook: string;
  server: string;
  input: Record<string, unknown>;
}

/** Serves `hook` as `name`: `answer` gets each request (kept in the returned list) and returns the reply. */
async function serve(hook: string, name: string, answer: (req: HookRequest) => unknown) {
  const seen: HookRequest[] = [];
  subs.push(
    w.nc.subscribe(`fleet.hook.${hook}.${name}`, {
      queue: `hooks-${name}`,
      callback: (_e, m) => {
        const req = m.json<HookRequest>();
        seen.push(req);
        const reply = answer(req);
        if (reply !== undefined) m.respond(JSON.stringify(reply));
      },
    }),
  );
  await w.nc.flush();
  return seen;
}

const ended = (ev: { type: string }[]) => ev.some((e) => e.type === "agent_end");
const agentOrder = (events: FleetEvent[]) =>
  notation(events.filter((e) => (AGENT_EVENT_TYPES as readonly string[]).includes(e.type)));
const decisions = (events: FleetEvent[]) =>
  events.flatMap((e) => (e.type === "hook_decision" ? [{ hook: e.hook, server: e.server, output: e.output }] : []));
/** The text of every message of a request, in order. */
const sentTexts = (r: RecordedRequest) =>
  ((r.body?.messages ?? []) as { content: string | { type: string; text?: string }[] }[]).map((m) =>
    typeof m.content === "string" ? m.content : m.content.map((b) => b.text ?? `<${b.type}>`).join(""),
  );
const systemOf = (r: RecordedRequest) => {
  const s = r.body?.system as string | { text: string }[] | undefined;
  return typeof s === "string" ? s : s?.map((b) => b.text).join("");
};
const userText = (text: string) => ({ messages: [{ role: "user", content: [{ type: "text", text }], timestamp: 1 }] });
const PLAIN = [
  "agent_start",
  "turn_start",
  "ms:user",
  "me:user",
  "ms:assistant",
  "me:assistant(stop)",
  "turn_end",
  "agent_end",
];

describe("loop service / named hook servers", () => {
  it("transform_context: the model is sent the server's context, the transcript keeps its own, the decision is logged", async () => {
    const seen = await serve("transform_context", "first", (req) => {
      const messages = req.input.messages as { role: string; content: { type: string; text: string }[] }[];
      return {
        output: {
          messages: messages.map((m) => ({
            ...m,
            content: m.content.map((b) => ({ ...b, text: b.text.replace(/sk-ant-\w+/g, "[REDACTED]") })),
          })),
        },
      };
    });
    w.fake.script(fakeReply([fakeText("ok")]));
    await w.cmd.send("rh-transform", { type: "prompt", text: "my key is sk-ant-abc123def456" });
    const events = await w.cmd.waitFor("rh-transform", ended);
    expect(sentTexts(w.fake.requests[0] as RecordedRequest)).toEqual(["my key is [REDACTED]"]);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ sessionId: "rh-transform", turn: 1, hook: "transform_context", server: "first" });
    const user = events.find((e) => e.type === "message_end" && e.message.role === "user");
    expect(user?.type === "message_end" && JSON.stringify(user.message)).toContain("sk-ant-abc123def456");
    expect(decisions(events)).toHaveLength(1);
    expect(decisions(events)[0]).toMatchObject({ hook: "transform_context", server: "first" });
    // pi's order of the client-visible events is unchanged.
    expect(agentOrder(events)).toEqual(PLAIN);
  });

  it("convert_to_llm: the server rewrites the provider messages", async () => {
    await serve("convert_to_llm", "second", (req) => {
      const messages = req.input.messages as unknown[];
      return {
        output: { messages: [...messages.slice(0, -1), ...userText("converted").messages] },
      };
    });
    w.fake.script(fakeReply([fakeText("ok")]));
    await w.cmd.send("rh-convert", { type: "prompt", text: "original" });
    const events = await w.cmd.waitFor("rh-convert", ended);
    expect(sentTexts(w.fake.requests[0] as RecordedRequest)).toEqual(["converted"]);
    expect(decisions(events).map((d) => `${d.hook}/${d.server}`)).toEqual(["convert_to_llm/second"]);
  });

  it("on_payload: the server sees the request as it goes out and replaces the system prompt", async () => {
    const seen = await serve("on_payload", "first", (req) => ({
      output: { systemPrompt: `${req.input.systemPrompt as string} Answer in French.` },
    }));
    w.fake.script(fakeReply([fakeText("d'accord")]));
    await w.cmd.send("rh-payload", { type: "prompt", text: "hello" });
    const events = await w.cmd.waitFor("rh-payload", ended);
    expect(systemOf(w.fake.requests[0] as RecordedRequest)).toBe("You are a test agent. Answer in French.");
    expect(seen[0]?.input).toMatchObject({
      model: { provider: "anthropic", modelId: "test-model" },
      systemPrompt: "You are a test agent.",
      tools: [],
    });
    expect(decisions(events).map((d) => d.hook)).toEqual(["on_payload"]);
  });

  it("should_stop_after_turn: the server stops the run after the turn, so the model is not called again", async () => {
    const seen = await serve("should_stop_after_turn", "second", () => ({ output: { stop: true } }));
    w.fake.script(
      fakeReply([fakeToolUse("no_such_tool", {})], { stopReason: "tool_use" }),
      fakeReply([fakeText("never")]),
    );
    await w.cmd.send("rh-stop", { type: "prompt", text: "go" });
    const events = await w.cmd.waitFor("rh-stop", ended);
    expect(w.fake.requests).toHaveLength(1);
    expect(seen[0]?.input).toMatchObject({ stop: false });
    expect(agentOrder(events).slice(-2)).toEqual(["turn_end", "agent_end"]);
    expect(decisions(events)).toEqual([{ hook: "should_stop_after_turn", server: "second", output: { stop: true } }]);
  });

  it("prepare_next_turn: the server's system prompt is used from the next LLM call of the run", async () => {
    await serve("prepare_next_turn", "first", (req) =>
      req.turn === 1 ? { output: { systemPrompt: "Turn two." } } : {},
    );
    w.fake.script(
      fakeReply([fakeToolUse("no_such_tool", {})], { stopReason: "tool_use" }),
      fakeReply([fakeText("done")]),
    );
    await w.cmd.send("rh-prepare", { type: "prompt", text: "go" });
    const events = await w.cmd.waitFor("rh-prepare", ended);
    expect(w.fake.requests.map(systemOf)).toEqual(["You are a test agent.", "Turn two."]);
    expect(decisions(events)).toEqual([
      { hook: "prepare_next_turn", server: "first", output: { systemPrompt: "Turn two." } },
    ]);
  });

  it("two servers compose in the worker's order: the second sees the first's output", async () => {
    await serve("transform_context", "first", () => ({ output: userText("alpha") }));
    const second = await serve("transform_context", "second", (req) => {
      const text = (req.input.messages as { content: { text: string }[] }[])[0]?.content[0]?.text;
      return { output: userText(`${text} beta`) };
    });
    w.fake.script(fakeReply([fakeText("ok")]));
    await w.cmd.send("rh-compose", { type: "prompt", text: "start" });
    const events = await w.cmd.waitFor("rh-compose", ended);
    expect(second[0]?.input).toEqual(userText("alpha"));
    expect(sentTexts(w.fake.requests[0] as RecordedRequest)).toEqual(["alpha beta"]);
    expect(decisions(events).map((d) => d.server)).toEqual(["first", "second"]);
  });

  it("an answer that changes nothing is not logged", async () => {
    const seen = await serve("transform_context", "first", () => ({}));
    w.fake.script(fakeReply([fakeText("ok")]));
    await w.cmd.send("rh-nochange", { type: "prompt", text: "nothing secret" });
    const events = await w.cmd.waitFor("rh-nochange", ended);
    expect(seen).toHaveLength(1);
    expect(decisions(events)).toEqual([]);
    expect(sentTexts(w.fake.requests[0] as RecordedRequest)).toEqual(["nothing secret"]);
  });

  it("a server that does not answer in time fails closed: the run ends with the reason, the model is not called", async () => {
    await serve("transform_context", "second", () => undefined);
    await w.cmd.send("rh-timeout", { type: "prompt", text: "sk-ant-leakmeplease" });
    const events = await w.cmd.waitFor("rh-timeout", ended);
    expect(w.fake.requests).toHaveLength(0);
    const last = events.filter((e) => e.type === "message_end").at(-1);
    expect(last?.type === "message_end" && last.message.role === "assistant" && last.message.stopReason).toBe("error");
    expect(last?.type === "message_end" && last.message.role === "assistant" && last.message.errorMessage).toBe(
      "Remote hook fleet.hook.transform_context.second timed out after 1000 ms",
    );
    expect(decisions(events)).toEqual([]);
  });

  it("an invalid answer fails closed too", async () => {
    await serve("on_payload", "first", () => ({ output: { systemPrompt: 42 } }));
    await w.cmd.send("rh-invalid", { type: "prompt", text: "hi" });
    const events = await w.cmd.waitFor("rh-invalid", ended);
    expect(w.fake.requests).toHaveLength(0);
    const last = events.filter((e) => e.type === "message_end").at(-1);
    expect(last?.type === "message_end" && last.message.role === "assistant" && last.message.errorMessage).toBe(
      "invalid reply from fleet.hook.on_payload.first",
    );
  });
});
