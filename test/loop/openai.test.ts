// A session on an OpenAI-compatible model (pi-ai's openai-completions provider, the real `openai` SDK
// inside) against the testkit's fake OpenAI server: tools run by a real tool runner, usage recorded
// and priced from models.json, a budget in dollars, an abort mid-stream, and overflow recovery.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createModelCatalog, parseModelsJson, piAiProviders } from "@fleet/loop";
import { type AssistantMessage, type FleetEvent, foldSessionEvents } from "@fleet/protocol";
import {
  type FakeOpenAI,
  openAIContextOverflow,
  openAIReply,
  openAIText,
  openAIToolCall,
  type RecordedOpenAIRequest,
  startFakeOpenAI,
} from "@fleet/testkit";
import { createBuiltinTools } from "@fleet/tools";
import { getProviders } from "@mariozechner/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { notation, startLoopStack } from "../support/loop-harness.js";

const KEY = "sk-local-fleet";
/** USD per million tokens, as models.json states it. */
const PRICE = { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 0 };
const MODEL = { provider: "local", modelId: "qwen-coder" };

let fake: FakeOpenAI;
let stack: Awaited<ReturnType<typeof startLoopStack>>;

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: KEY });
  const modelsJson = parseModelsJson(
    JSON.stringify({
      providers: {
        local: {
          baseUrl: fake.url,
          api: "openai-completions",
          apiKey: "LOCAL_MODEL_KEY",
          compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
          models: [{ id: MODEL.modelId, contextWindow: 32_000, maxTokens: 4_096, cost: PRICE }],
        },
      },
    }),
    new Set(getProviders()),
  );
  if (!modelsJson.ok) throw new Error(modelsJson.error);
  const catalog = createModelCatalog(modelsJson.value, { LOCAL_MODEL_KEY: KEY });
  const tools = createBuiltinTools();
  stack = await startLoopStack({
    tools: [tools.ls, tools.read],
    providers: piAiProviders({ catalog, maxRetries: 0 }),
    worker: { modelInfo: (model) => catalog.info(model), coalesceMs: 10 },
  });
});
afterAll(async () => {
  await stack?.stop();
  await fake?.stop();
});

const runs = (n: number) => (events: FleetEvent[]) => events.filter((e) => e.type === "agent_end").length >= n;
const assistants = (events: FleetEvent[]): AssistantMessage[] =>
  events.flatMap((e) => (e.type === "message_end" && e.message.role === "assistant" ? [e.message] : []));
const sent = (r: RecordedOpenAIRequest | undefined) =>
  (r?.body?.messages ?? []) as { role: string; content?: unknown; tool_call_id?: string }[];
const costOf = (input: number, output: number, cacheRead = 0) =>
  (input * PRICE.input + output * PRICE.output + cacheRead * PRICE.cacheRead) / 1e6;

async function create(sid: string, extra: Record<string, unknown> = {}): Promise<void> {
  await stack.cmd.send(sid, { type: "create_session", config: { model: MODEL, ...extra } });
  await stack.cmd.waitFor(sid, (ev) => ev.some((e) => e.type === "session_created"));
}

describe("loop service / an OpenAI-compatible model through pi-ai (fake OpenAI server, real SDK)", () => {
  it("lists and reads files through the real runner; usage is recorded and priced from models.json", async () => {
    fake.reset();
    const sid = "oai-tools";
    // the runner's per-session workspace
    mkdirSync(join(stack.workspace, sid), { recursive: true });
    writeFileSync(join(stack.workspace, sid, "notes.txt"), "hello from the workspace\n");
    await create(sid);
    fake.script(
      openAIReply(
        [
          openAIToolCall("ls", { path: "." }, { id: "call_ls" }),
          openAIToolCall("read", { path: "notes.txt" }, { id: "call_read" }),
        ],
        {
          usage: { input: 1_000, output: 40 },
        },
      ),
      openAIReply([openAIText("notes.txt says hello.")], { usage: { input: 1_300, output: 12, cached: 1_000 } }),
    );
    await stack.cmd.send(sid, { type: "prompt", text: "what is in notes.txt?" });
    const events = await stack.cmd.waitFor(sid, runs(1), 20_000);
    expect(notation(events).filter((l) => l.startsWith("tool_start") || l.startsWith("me:assistant"))).toEqual([
      "me:assistant(toolUse)",
      "tool_start:ls",
      "tool_start:read",
      "me:assistant(stop)",
    ]);
    const ends = events.flatMap((e) => (e.type === "tool_execution_end" ? [e] : []));
    expect(ends.map((e) => [e.toolName, e.isError]).sort()).toEqual([
      ["ls", false],
      ["read", false],
    ]);
    // the second request carries both results, in pi-ai's Chat Completions shape
    expect(fake.requests).toHaveLength(2);
    const tools = sent(fake.requests[1]).filter((m) => m.role === "tool");
    expect(tools.map((m) => m.tool_call_id)).toEqual(["call_ls", "call_read"]);
    expect(JSON.stringify(tools[0]?.content)).toContain("notes.txt");
    expect(JSON.stringify(tools[1]?.content)).toContain("hello from the workspace");
    // usage as the provider counted it (cached input apart), priced at models.json's cost
    const [first, second] = assistants(events);
    expect(first).toMatchObject({ api: "openai-completions", provider: "local", model: MODEL.modelId });
    expect(first?.usage).toMatchObject({ input: 1_000, output: 40, cacheRead: 0 });
    expect(first?.usage.cost.total).toBeCloseTo(costOf(1_000, 40), 12);
    expect(second?.usage).toMatchObject({ input: 300, output: 12, cacheRead: 1_000 });
    expect(second?.usage.cost.total).toBeCloseTo(costOf(300, 12, 1_000), 12);
    expect(second?.content).toEqual([{ type: "text", text: "notes.txt says hello." }]);
    const spent = foldSessionEvents(events).spend.session;
    expect(spent).toMatchObject({ inputTokens: 2_300, outputTokens: 52 });
    expect(spent.costUsd).toBeCloseTo(costOf(1_000, 40) + costOf(300, 12, 1_000), 12);
  });

  it("a session budget in dollars, priced at the model's cost, stops the run before its next call", async () => {
    fake.reset();
    const sid = "oai-budget";
    await create(sid, { budget: { session: { costUsd: 0.005 } } });
    fake.script(
      openAIReply([openAIToolCall("ls", { path: "." }, { id: "call_b1" })], { usage: { input: 1_000, output: 500 } }),
    );
    await stack.cmd.send(sid, { type: "prompt", text: "look around" });
    const events = await stack.cmd.waitFor(sid, runs(1), 20_000);
    const messages = assistants(events);
    expect(messages.map((m) => m.stopReason)).toEqual(["toolUse", "error"]);
    expect(messages[1]?.errorReason).toBe("budget_exceeded");
    expect(messages[1]?.errorMessage).toBe(`Budget exceeded: session cost $${costOf(1_000, 500).toFixed(4)}/$0.0050`);
    expect(fake.requests).toHaveLength(1);
  });

  it("an abort mid-stream ends the message aborted with its partial text and closes the request", async () => {
    fake.reset();
    const sid = "oai-abort";
    await create(sid);
    // the role chunk and two deltas, then nothing until the client goes away
    fake.script(
      openAIReply([openAIText("thinking out loud forever", ["thinking ", "out loud ", "forever"])], {
        stallAfterEvents: 3,
      }),
    );
    await stack.cmd.send(sid, { type: "prompt", text: "talk" });
    await stack.cmd.waitFor(sid, (ev) => ev.some((e) => e.type === "message_update"), 20_000);
    await stack.cmd.send(sid, { type: "abort" });
    const events = await stack.cmd.waitFor(sid, runs(1), 20_000);
    const [message] = assistants(events);
    expect(message).toMatchObject({
      stopReason: "aborted",
      errorMessage: "Request was aborted",
      content: [{ type: "text", text: "thinking out loud " }],
    });
    expect(notation(events).slice(-3)).toEqual(["me:assistant(aborted)", "turn_end", "agent_end"]);
    expect(await fake.waitForOutcome(0)).toBe("client_closed");
  });

  it("a context overflow (400 context_length_exceeded) is compacted and the call retried, as on Anthropic", async () => {
    fake.reset();
    const sid = "oai-overflow";
    await create(sid);
    await stack.cmd.send(sid, { type: "set_compaction_settings", keepRecentTokens: 1 });
    fake.script(openAIReply("first answer", { usage: { input: 1_000, output: 10 } }));
    await stack.cmd.send(sid, { type: "prompt", text: "first question" });
    await stack.cmd.waitFor(sid, runs(1), 20_000);
    fake.script(
      openAIContextOverflow(40_000, 32_000),
      openAIReply("## Goal\nEarlier work."),
      openAIReply("answer after recovery", { usage: { input: 800, output: 10 } }),
    );
    await stack.cmd.send(sid, { type: "prompt", text: "second question" });
    const events = await stack.cmd.waitFor(sid, runs(2), 20_000);
    const run = events.slice(events.findLastIndex((e) => e.type === "agent_start"));
    expect(notation(run)).toEqual([
      "agent_start",
      "turn_start",
      "ms:user",
      "me:user",
      "ms:assistant",
      "me:assistant(error)",
      "compaction_start",
      "compaction",
      "compaction_end",
      "ms:assistant",
      "me:assistant(stop)",
      "turn_end",
      "agent_end",
    ]);
    expect(assistants(run)[0]?.errorMessage).toContain("maximum context length is 32000 tokens");
    expect(run.find((e) => e.type === "compaction_end")).toMatchObject({ reason: "overflow", willRetry: true });
    const retry = JSON.stringify(sent(fake.requests.at(-1)));
    expect(retry).toContain("Earlier work.");
    expect(retry).toContain("second question");
    expect(retry).not.toContain("first question");
  });
});
