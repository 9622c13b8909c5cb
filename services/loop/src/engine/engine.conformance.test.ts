// Differential conformance: the same script through pi 0.73.1's Agent (faux provider) and through
// Fleet's engine, whose LLM is the scripted provider, or the same steps served by a fake server through
// a real provider: Fleet's Anthropic client (@anthropic-ai/sdk) or pi-ai's Chat Completions provider
// (the `openai` SDK). Event sequences and final messages must match. Where Fleet differs on purpose
// (README §Differences), the test asserts Fleet's documented behaviour and pi's.
import { type FakeAnthropic, type FakeOpenAI, startFakeAnthropic, startFakeOpenAI } from "@fleet/testkit";
import {
  type AgentEvent,
  type AgentLoopConfig,
  type AgentMessage as PiAgentMessage,
  runAgentLoop,
} from "@mariozechner/pi-agent-core";
import { getProviders, registerFauxProvider } from "@mariozechner/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createAnthropicStreamFn,
  createModelCatalog,
  createPiAiStreamFn,
  parseModelsJson,
} from "../providers/index.js";
import { createInProcessExecutor } from "./in-process-tools.js";
import { agentLoop } from "./run-agent-loop.js";
import { createScriptedProvider, type Sleep } from "./scripted-provider.js";
import {
  type ComparableEvent,
  type Driver,
  describeEvent,
  fleetDriver,
  normalizeMessages,
  piDriver,
  type ScenarioLlm,
  type ScenarioOptions,
  type ScenarioTool,
  userText,
} from "./testing/drivers.js";
import { deferred, echoTool, recorder, sequentialIds, T0 } from "./testing/harness.js";
import { SERVED_ANTHROPIC_ERROR_TYPE, servedByFakeAnthropic, servedByFakeOpenAI } from "./testing/served-llm.js";
import type { EngineEvent } from "./types.js";

type Act = (d: Driver) => Promise<void>;

/**
 * Where Fleet's LLM calls go. `llm` absent: the scripted provider. A provider path compares the
 * messages without the provider's identity (api, provider, model, response id, signatures) and, when
 * `sameUpdates` is false, the traces without `message_update` lines: pi-ai's Chat Completions provider
 * ends every block at the end of the message and streams a tool call's name before its arguments.
 */
interface LlmPath {
  readonly name: string;
  llm?: ScenarioLlm;
  readonly sameUpdates: boolean;
  /** The provider's wording of a scripted error text, undone before comparing. */
  readonly errorPrefix?: string;
}

const SCRIPTED: LlmPath = { name: "scripted provider", sameUpdates: true };
let path: LlmPath = SCRIPTED;

/** Runs the scenario on both sides; returns both traces and normalised final messages. */
async function both(options: () => ScenarioOptions, act: Act) {
  const pi = piDriver(options());
  try {
    await act(pi);
  } finally {
    pi.dispose();
  }
  const fleet = fleetDriver(options(), path.llm);
  await act(fleet);
  const normalize = (messages: unknown[]) =>
    path.llm ? normalizeMessages(messages).map(withoutProviderIdentity) : normalizeMessages(messages);
  return {
    pi: { trace: pi.trace(), messages: normalize(pi.messages()) },
    fleet: { trace: fleet.trace(), messages: normalize(fleet.messages()).map(withoutErrorPrefix) },
  };
}

function withoutErrorPrefix(message: unknown): unknown {
  const m = message as { errorMessage?: unknown };
  const prefix = path.errorPrefix;
  if (!prefix || typeof m.errorMessage !== "string" || !m.errorMessage.startsWith(prefix)) return message;
  return { ...m, errorMessage: m.errorMessage.slice(prefix.length) };
}

function withoutProviderIdentity(message: unknown): unknown {
  const m = message as Record<string, unknown>;
  if (m.role !== "assistant") return m;
  const { api: _a, provider: _p, model: _m, responseId: _r, responseModel: _rm, ...rest } = m;
  const content = (rest.content as Record<string, unknown>[]).map(
    ({ thinkingSignature: _t, textSignature: _x, ...block }) => block,
  );
  return { ...rest, content };
}

async function expectConformant(options: () => ScenarioOptions, act: Act, fixture?: string[]) {
  const { pi, fleet } = await both(options, act);
  const comparable = (trace: string[]) =>
    path.sameUpdates ? trace : trace.filter((l) => !l.startsWith("message_update"));
  expect(comparable(fleet.trace)).toEqual(comparable(pi.trace));
  expect(fleet.messages).toEqual(pi.messages);
  if (fixture) expect(pi.trace.filter((l) => !l.startsWith("message_update"))).toEqual(fixture);
  return { pi, fleet };
}

const ok = (text: string) => ({ content: [{ type: "text" as const, text }], details: { text } });
const call = (id: string, name = "echo", args: Record<string, unknown> = { text: id }) => ({
  type: "toolCall" as const,
  id,
  name,
  arguments: args,
});

/** Echo where a call waits until another call's tool_execution_end was seen (per side). */
function echoWaiting(waiter: string, waitFor: string, opts: { throwing?: boolean } = {}) {
  let gate = deferred();
  const tool: ScenarioTool & { bind(d: Driver): void } = {
    def: echoTool,
    bind: (d) => {
      gate = deferred();
      d.onEvent((e) => {
        if (e.type === "tool_execution_end" && e.toolCallId === waitFor) gate.resolve();
      });
    },
    run: async (args, _signal, onUpdate, id) => {
      onUpdate({ progress: id });
      if (id === waiter) {
        await gate.promise;
        if (opts.throwing) throw new Error("kaboom");
      }
      return ok(String((args as { text: unknown }).text));
    },
  };
  return tool;
}

const prompt =
  (text: string, before?: (d: Driver) => void | Promise<void>): Act =>
  async (d) => {
    await before?.(d);
    await d.prompt(text);
  };

const realSleep: Sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

/** Every call went through `fake` and was answered. */
function expectAllServed(fake: FakeAnthropic | FakeOpenAI): void {
  expect(fake.requests.length).toBeGreaterThan(20);
  expect(fake.requests.every((r) => r.outcome !== "pending")).toBe(true);
  expect(fake.pendingReplies()).toBe(0);
}

const PATHS: readonly (LlmPath & { setup?: () => Promise<() => Promise<void>> })[] = [
  SCRIPTED,
  {
    name: "Anthropic provider (real SDK), fake server",
    sameUpdates: true,
    errorPrefix: `${SERVED_ANTHROPIC_ERROR_TYPE}: `,
    async setup() {
      const fake = await startFakeAnthropic({ apiKey: "sk-conformance" });
      const streamFn = createAnthropicStreamFn({ apiKey: "sk-conformance", baseURL: fake.url, maxRetries: 0 });
      this.llm = servedByFakeAnthropic(fake, streamFn, { provider: "anthropic", modelId: "claude-sonnet-5" });
      return async () => {
        expectAllServed(fake);
        await fake.stop();
      };
    },
  },
  {
    name: "OpenAI Chat Completions through pi-ai, fake server",
    sameUpdates: false,
    async setup() {
      const fake: FakeOpenAI = await startFakeOpenAI({ apiKey: "sk-conformance" });
      const models = parseModelsJson(
        JSON.stringify({
          providers: {
            fake: {
              baseUrl: fake.url,
              api: "openai-completions",
              apiKey: "sk-conformance",
              models: [{ id: "conformance" }],
            },
          },
        }),
        new Set(getProviders()),
      );
      if (!models.ok) throw new Error(models.error);
      const streamFn = createPiAiStreamFn({ catalog: createModelCatalog(models.value, {}), maxRetries: 0 });
      this.llm = servedByFakeOpenAI(fake, streamFn, { provider: "fake", modelId: "conformance" });
      return async () => {
        expectAllServed(fake);
        expect(fake.requests.every((r) => r.api === "chat")).toBe(true);
        await fake.stop();
      };
    },
  },
];

describe.each(PATHS)("conformance with pi 0.73.1 (Fleet on the $name)", (llmPath) => {
  let teardown: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    teardown = await llmPath.setup?.();
    path = llmPath;
  });
  afterAll(async () => {
    path = SCRIPTED;
    await teardown?.();
  });

  it("plain prompt", async () => {
    await expectConformant(() => ({ steps: [{ text: "Hello there" }] }), prompt("hi"), [
      "agent_start",
      "turn_start",
      "message_start:user(hi)",
      "message_end:user(hi)",
      "message_start:assistant",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(user,assistant)",
    ]);
  });

  it("thinking, text and a tool call in one message, deltas included", async () => {
    const { fleet } = await expectConformant(
      () => ({
        steps: [
          { content: [{ type: "thinking", thinking: "let me see" }, call("t1")], text: "calling" },
          { text: "done" },
        ],
        tools: [{ def: echoTool, run: async (a) => ok(String((a as { text: string }).text)) }],
      }),
      prompt("go"),
    );
    expect(fleet.trace).toContain("message_update:toolcall_delta");
  });

  it("two parallel tools, t1 slow, t2 fast", async () => {
    const tool = echoWaiting("t1", "t2");
    await expectConformant(
      () => ({ steps: [{ content: [call("t1"), call("t2")] }, { text: "done" }], tools: [tool] }),
      prompt("go", (d) => tool.bind(d)),
      [
        "agent_start",
        "turn_start",
        "message_start:user(go)",
        "message_end:user(go)",
        "message_start:assistant",
        "message_end:assistant(toolUse)",
        "tool_execution_start:t1",
        "tool_execution_start:t2",
        "tool_execution_update:t1",
        "tool_execution_update:t2",
        "tool_execution_end:t2",
        "tool_execution_end:t1",
        "message_start:toolResult(t1)",
        "message_end:toolResult(t1)",
        "message_start:toolResult(t2)",
        "message_end:toolResult(t2)",
        "turn_end[t1,t2]",
        "turn_start",
        "message_start:assistant",
        "message_end:assistant(stop)",
        "turn_end[]",
        "agent_end(user,assistant,toolResult,toolResult,assistant)",
      ],
    );
  });

  it("sequential tool execution", async () => {
    const tool: ScenarioTool = {
      def: echoTool,
      run: async (a, _s, u, id) => {
        u(id);
        return ok(String((a as { text: string }).text));
      },
    };
    await expectConformant(
      () => ({
        steps: [{ content: [call("t1"), call("t2")] }, { text: "done" }],
        tools: [tool],
        config: { toolExecution: "sequential" },
      }),
      prompt("go"),
    );
  });

  it("one executionMode:'sequential' tool serialises the batch", async () => {
    const serial: ScenarioTool = {
      def: { ...echoTool, name: "serial", executionMode: "sequential" },
      run: async (_a, _s, u, id) => {
        u(id);
        return ok(id);
      },
    };
    const tool: ScenarioTool = {
      def: echoTool,
      run: async (_a, _s, u, id) => {
        u(id);
        return ok(id);
      },
    };
    await expectConformant(
      () => ({
        steps: [{ content: [call("t1"), call("t2", "serial"), call("t3")] }, { text: "done" }],
        tools: [tool, serial],
      }),
      prompt("go"),
    );
  });

  it("tool throws, unknown tool, invalid arguments (parallel): same order, same error texts", async () => {
    const tool = echoWaiting("t1", "t3", { throwing: true });
    const { fleet } = await expectConformant(
      () => ({
        steps: [{ content: [call("t1"), call("t2", "nope"), call("t3", "echo", {})] }, { text: "done" }],
        tools: [tool],
      }),
      prompt("go", (d) => tool.bind(d)),
    );
    expect(fleet.trace.filter((l) => l.startsWith("tool_execution_end"))).toEqual([
      "tool_execution_end:t2(err)",
      "tool_execution_end:t3(err)",
      "tool_execution_end:t1(err)",
    ]);
    const texts = fleet.messages
      .filter((m) => (m as { role: string }).role === "toolResult")
      .map((m) => (m as { content: { text: string }[] }).content[0]?.text);
    expect(texts).toEqual([
      "kaboom",
      "Tool nope not found",
      'Validation failed for tool "echo":\n  - text: must have required properties text\n\nReceived arguments:\n{}',
    ]);
  });

  it("blocked by beforeToolCall (t2), t1 slow", async () => {
    const tool = echoWaiting("t1", "t2");
    await expectConformant(
      () => ({
        steps: [{ content: [call("t1"), call("t2")] }, { text: "done" }],
        tools: [tool],
        beforeToolCall: async ({ toolCall }) => (toolCall.id === "t2" ? { block: true } : undefined),
      }),
      prompt("go", (d) => tool.bind(d)),
    );
  });

  it("LLM error", async () => {
    await expectConformant(
      () => ({ steps: [{ text: "partial", error: "529 overloaded" }] }),
      prompt("hi", async (d) => d.followUp("queued")),
      [
        "agent_start",
        "turn_start",
        "message_start:user(hi)",
        "message_end:user(hi)",
        "message_start:assistant",
        "message_end:assistant(error)",
        "turn_end[]",
        "agent_end(user,assistant)",
      ],
    );
  });

  it("abort mid-stream keeps the partial content (scripted provider on both sides)", async () => {
    const scripted = { tokensPerSecond: 1000, chunkChars: 5, sleep: realSleep };
    const { fleet } = await expectConformant(
      () => ({ steps: [{ text: "Hello world, slowly" }], scriptedOnBothSides: scripted }),
      prompt("hi", (d) =>
        d.onEvent((e) => {
          if (e.type === "message_update" && e.delta === "text_delta") d.abort();
        }),
      ),
    );
    expect(fleet.trace.slice(-6)).toEqual([
      "message_start:assistant",
      "message_update:text_start",
      "message_update:text_delta",
      "message_end:assistant(aborted)",
      "turn_end[]",
      "agent_end(user,assistant)",
    ]);
    expect(fleet.messages.at(-1)).toMatchObject({
      content: [{ type: "text", text: "Hello" }],
      stopReason: "aborted",
      errorMessage: "Request was aborted",
    });
  });

  for (const mode of ["one-at-a-time", "all"] as const) {
    it(`steer S1,S2 + follow-up F1,F2 queued during the tool batch (${mode})`, async () => {
      let driver: Driver | undefined;
      const tool: ScenarioTool = {
        def: echoTool,
        run: async () => {
          const d = driver as Driver;
          await d.steer("S1");
          await d.steer("S2");
          await d.followUp("F1");
          await d.followUp("F2");
          return ok("x");
        },
      };
      const steps = [{ content: [call("t1")] }, { text: "a1" }, { text: "a2" }, { text: "a3" }, { text: "a4" }];
      const { pi } = await expectConformant(
        () => ({ steps, tools: [tool], config: { steeringMode: mode, followUpMode: mode } }),
        prompt("go", (d) => {
          driver = d;
        }),
      );
      const injected = pi.trace.filter((l) => /message_start:user\((S|F)/.test(l) || l === "turn_start");
      expect(injected).toEqual(
        mode === "all"
          ? [
              "turn_start",
              "turn_start",
              "message_start:user(S1)",
              "message_start:user(S2)",
              "turn_start",
              "message_start:user(F1)",
              "message_start:user(F2)",
            ]
          : [
              "turn_start",
              "turn_start",
              "message_start:user(S1)",
              "turn_start",
              "message_start:user(S2)",
              "turn_start",
              "message_start:user(F1)",
              "turn_start",
              "message_start:user(F2)",
            ],
      );
    });
  }

  for (const mode of ["one-at-a-time", "all"] as const) {
    it(`pre-queued steering joins the first turn (${mode})`, async () => {
      await expectConformant(
        () => ({ steps: [{ text: "a1" }, { text: "a2" }], config: { steeringMode: mode } }),
        prompt("hi", async (d) => {
          await d.steer("pre1");
          await d.steer("pre2");
        }),
      );
    });
  }

  it("terminate: every result terminates → no further LLM call", async () => {
    const tool: ScenarioTool = { def: echoTool, run: async () => ({ ...ok("bye"), terminate: true }) };
    await expectConformant(() => ({ steps: [{ content: [call("t1"), call("t2")] }], tools: [tool] }), prompt("go"));
  });

  it("terminate with queued follow-up still runs the follow-up", async () => {
    let driver: Driver | undefined;
    const tool: ScenarioTool = {
      def: echoTool,
      run: async () => {
        await driver?.followUp("F");
        return { ...ok("bye"), terminate: true };
      },
    };
    await expectConformant(
      () => ({ steps: [{ content: [call("t1")] }, { text: "after" }], tools: [tool] }),
      prompt("go", (d) => {
        driver = d;
      }),
    );
  });

  it("continue() from an assistant tail with a queued follow-up", async () => {
    const history = [userText("q"), assistantText("earlier")];
    await expectConformant(
      () => ({ steps: [{ text: "answer" }], messages: history }),
      async (d) => {
        await d.followUp("fu");
        await d.continue();
      },
      [
        "agent_start",
        "turn_start",
        "message_start:user(fu)",
        "message_end:user(fu)",
        "message_start:assistant",
        "message_end:assistant(stop)",
        "turn_end[]",
        "agent_end(user,assistant)",
      ],
    );
  });

  it("continue() from an assistant tail with queued steering skips the initial steering poll", async () => {
    const history = [userText("q"), assistantText("earlier")];
    await expectConformant(
      () => ({ steps: [{ text: "a1" }, { text: "a2" }], messages: history }),
      async (d) => {
        await d.steer("S1");
        await d.steer("S2");
        await d.continue();
      },
    );
  });

  it("continue() from a user tail", async () => {
    await expectConformant(
      () => ({ steps: [{ text: "a" }], messages: [userText("q")] }),
      (d) => d.continue(),
    );
  });

  it("shouldStopAfterTurn (stateless loops): agent_end after turn_end, steering polled once, follow-ups never", async () => {
    const steps = [{ content: [call("t1")] }, { text: "never" }];
    const stop = (turn: { message: { stopReason: string } }) => turn.message.stopReason === "toolUse";

    const faux = registerFauxProvider({
      api: "scripted",
      provider: "scripted",
      models: [{ id: "scripted-1" }],
      tokenSize: { min: 1e9, max: 1e9 },
    });
    const piPolls = { steer: 0, followUp: 0 };
    const piTrace: string[] = [];
    try {
      faux.setResponses([
        { ...assistantText(""), content: [call("t1")], stopReason: "toolUse" },
        assistantText("never"),
      ] as never);
      const config: AgentLoopConfig = {
        model: faux.getModel(),
        convertToLlm: (m) => m as never,
        shouldStopAfterTurn: stop,
        getSteeringMessages: async () => {
          piPolls.steer++;
          return [];
        },
        getFollowUpMessages: async () => {
          piPolls.followUp++;
          return [];
        },
      };
      const tools = [{ ...echoTool, label: "echo", execute: async () => ok("x") }];
      await runAgentLoop(
        [userText("go") as PiAgentMessage],
        { systemPrompt: "", messages: [], tools: tools as never },
        config,
        async (e: AgentEvent) => {
          const line = describeEvent(comparable(e));
          if (line) piTrace.push(line);
        },
        undefined,
        undefined as never,
      );
    } finally {
      faux.unregister();
    }

    const rec = recorder();
    const fleetPolls = { steer: 0, followUp: 0 };
    const provider = createScriptedProvider({ steps, now: () => T0 });
    await agentLoop(
      [userText("go")],
      { systemPrompt: "", messages: [], tools: [echoTool] },
      {
        model: { provider: "scripted", modelId: "scripted-1" },
        thinkingLevel: "off",
        shouldStopAfterTurn: stop,
        getSteeringMessages: () => {
          fleetPolls.steer++;
          return [];
        },
        getFollowUpMessages: () => {
          fleetPolls.followUp++;
          return [];
        },
      },
      {
        streamFn: provider.streamFn,
        executeTool: createInProcessExecutor({ echo: () => ok("x") }),
        emit: rec.emit,
        now: () => T0,
        newId: sequentialIds(),
      },
    );
    const fleetTrace = rec.events.flatMap((e: EngineEvent) => {
      const body = e.body as ComparableEvent & { deltas?: { type: string }[] };
      const line = describeEvent(
        body.type === "message_update" ? { type: body.type, delta: body.deltas?.[0]?.type } : body,
      );
      return line ? [line] : [];
    });
    expect(fleetTrace).toEqual(piTrace);
    expect(piTrace.slice(-2)).toEqual(["turn_end[t1]", "agent_end(user,assistant,toolResult)"]);
    expect(fleetPolls).toEqual(piPolls);
    expect(piPolls).toEqual({ steer: 1, followUp: 0 });
  });
});

describe("deliberate differences from pi 0.73.1", () => {
  it("abort during a tool batch: pi appends an empty aborted assistant turn; Fleet ends after turn_end", async () => {
    const tool: ScenarioTool = {
      def: echoTool,
      run: (_a, signal) =>
        new Promise((_resolve, reject) =>
          signal?.addEventListener("abort", () => reject(new Error("Operation aborted"))),
        ),
    };
    const { pi, fleet } = await both(
      () => ({ steps: [{ content: [call("t1")] }, { text: "never" }], tools: [tool] }),
      prompt("go", (d) =>
        d.onEvent((e) => {
          if (e.type === "tool_execution_start") setTimeout(() => d.abort(), 0);
        }),
      ),
    );
    const tail = [
      "tool_execution_start:t1",
      "tool_execution_end:t1(err)",
      "message_start:toolResult(t1,err)",
      "message_end:toolResult(t1,err)",
      "turn_end[t1]",
    ];
    expect(pi.trace.slice(-11)).toEqual([
      "message_end:assistant(toolUse)",
      ...tail,
      "turn_start",
      "message_start:assistant",
      "message_end:assistant(aborted)",
      "turn_end[]",
      "agent_end(user,assistant,toolResult,assistant)",
    ]);
    expect(fleet.trace.slice(-7)).toEqual([
      "message_end:assistant(toolUse)",
      ...tail,
      "agent_end(user,assistant,toolResult)",
    ]);
    expect(fleet.messages.map((m) => (m as { role: string }).role)).toEqual(["user", "assistant", "toolResult"]);
  });

  it("length stop with tool calls: pi 0.73 runs them; Fleet fails them with the output-token-limit text (pi 0.83)", async () => {
    let runs = 0;
    const tool: ScenarioTool = {
      def: echoTool,
      run: async () => {
        runs++;
        return ok("ran");
      },
    };
    const { pi, fleet } = await both(
      () => ({ steps: [{ content: [call("t1")], stopReason: "length" }, { text: "again" }], tools: [tool] }),
      prompt("go"),
    );
    expect(runs).toBe(1); // pi only
    expect(pi.trace).toEqual(
      fleet.trace.map((l) =>
        l
          .replace("tool_execution_end:t1(err)", "tool_execution_end:t1")
          .replace("toolResult(t1,err)", "toolResult(t1)"),
      ),
    );
    expect((fleet.messages[2] as { content: { text: string }[] }).content[0]?.text).toMatch(/output-token limit/);
  });
});

function assistantText(text: string) {
  return {
    role: "assistant" as const,
    content: [{ type: "text" as const, text }],
    api: "scripted",
    provider: "scripted",
    model: "scripted-1",
    usage: {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop" as const,
    timestamp: T0,
  };
}

function comparable(event: AgentEvent): ComparableEvent {
  if (event.type === "message_update") return { type: event.type, delta: event.assistantMessageEvent.type };
  return event as unknown as ComparableEvent;
}
