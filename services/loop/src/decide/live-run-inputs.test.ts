// A live run's inputs are inputs of the runtime core: the engine asks the ports the shell wires to
// `decideInput` on the session's fold (`{provider_chunk}` for the chunk that ends an LLM call,
// `{turn_end}`, `{turn_boundary, stop}`; tool results: `live-tool-results.test.ts`) and emits what
// they decided (the message's end; `turn_end`, the writes flushed at it, `agent_end` where the fold
// ends the run; past the turn hooks, the queue polls and the next turn's start and messages), in
// pi's order: the same trace as the engine's own. The fold's accepted abort ends the run at the
// turn's end even before the engine's signal aborts.
import {
  ABORTED_ERROR_MESSAGE,
  type AgentMessage,
  type AssistantStreamEvent,
  evolveSession,
  type FleetEvent,
  findRunCursor,
} from "@fleet/protocol";
import { assistantMessage, textOf } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { resumePointFromCursor } from "../engine/resume-point.js";
import { STREAM_ENDED_EARLY } from "../engine/stream-assistant.js";
import {
  echoTool,
  sessionAt,
  T0,
  TEST_SESSION_ID,
  type TestEngine,
  testEngine,
  toFleetEvent,
  trace,
  user,
} from "../engine/testing/harness.js";
import type { StreamFn } from "../engine/types.js";
import { flushDrafts } from "../session-core/session-write.js";
import { interruptedErrorMessage, turnEndBody } from "../session-core/turn-boundary.js";
import { SPEC_DEFAULTS } from "../testing/decider-spec.js";
import { decideInput } from "./decide-input.js";

type Options = Parameters<typeof testEngine>[0];

const toolTurn = { content: [{ type: "toolCall" as const, id: "t1", name: "echo", arguments: { text: "x" } }] };
const ok = () => ({ content: [{ type: "text" as const, text: "x" }] });
const custom = (text: string): AgentMessage => ({
  role: "custom",
  customType: "note",
  content: text,
  display: true,
  timestamp: 7,
});

/** The engine with its run inputs wired to `decideInput` on its fold, as the shell wires them. */
function wired(options: Options): TestEngine & { undecided: number } {
  const t = testEngine(options);
  let n = 0;
  const ctx = () => ({ now: T0, newId: () => `core-${++n}`, defaults: SPEC_DEFAULTS, isKnownTool: () => true });
  const out = { ...t, undecided: 0 };
  t.ports.decideToolResult = (input) => {
    const decision = decideInput(t.session, TEST_SESSION_ID, input, ctx());
    return decision.kind === "decided" && decision.events.length > 0 ? decision.events : undefined;
  };
  t.ports.decideProviderChunk = (chunk) => {
    const decision = decideInput(t.session, TEST_SESSION_ID, { kind: "provider_chunk", chunk }, ctx());
    if (decision.kind === "decided" && decision.events.length > 0) return decision.events;
    out.undecided++;
    return undefined;
  };
  t.ports.decideTurnEnd = (turn) => {
    const c = ctx();
    const decision = decideInput(t.session, TEST_SESSION_ID, { kind: "turn_end" }, c);
    if (decision.kind === "decided" && decision.events.length > 0) return decision.events;
    out.undecided++;
    return [
      { id: c.newId(), body: turnEndBody(turn.message, turn.toolResults) },
      ...flushDrafts(t.session.pendingWrites, undefined, c.newId),
    ];
  };
  t.ports.decideTurnBoundary = (stop) => {
    const decision = decideInput(t.session, TEST_SESSION_ID, { kind: "turn_boundary", stop }, ctx());
    if (decision.kind === "decided" && decision.events.length > 0) return decision.events;
    out.undecided++;
    return undefined;
  };

  return out;
}

/**
 * The same run twice: on the engine's own steps, then wired to the core. `options` may reach the
 * engine that runs (`current()`, for tools and hooks that act on it); each run is a prompt "go".
 */
async function both(options: (current: () => TestEngine) => Options) {
  let current: TestEngine | undefined;
  const get = () => current as TestEngine;
  const own = testEngine(options(get));
  current = own;
  await own.engine.prompt("go");
  const core = wired(options(get));
  current = core;
  await core.engine.prompt("go");
  return { own, core };
}

const idsOf = (t: TestEngine, type: string) => t.rec.events.filter((e) => e.body.type === type).map((e) => e.id);

describe("a live run's turn ends through decideInput", () => {
  it("a tool turn and a final turn: each turn_end, and agent_end, decided by the core; the trace is the engine's own", async () => {
    const { own, core } = await both(() => ({
      tools: [echoTool],
      steps: [toolTurn, { text: "done" }],
      handlers: { echo: ok },
    }));
    expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
    expect(core.rec.events).toHaveLength(own.rec.events.length);
    expect(core.undecided).toBe(0);
    // the core's ids: what went out is what it decided (the run's end here is the boundary's, past the hooks)
    expect(idsOf(core, "turn_end")).toEqual([expect.stringMatching(/^core-/), expect.stringMatching(/^core-/)]);
    expect(core.rec.events.at(-1)?.body).toEqual(own.rec.events.at(-1)?.body);
  });

  it("an errored message ends the run at its turn: agent_end decided with turn_end", async () => {
    const { own, core } = await both(() => ({ steps: [{ error: "provider down" }] }));
    expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
    expect(trace(core.rec.events).slice(-2)).toEqual(["turn_end[]", "agent_end(2)"]);
    expect(idsOf(core, "agent_end")[0]).toMatch(/^core-/);
  });

  it("writes made during a tool call are flushed in the decision and reach the next LLM call", async () => {
    const contexts = new Map<TestEngine, number[]>();
    const { own, core } = await both((current) => ({
      tools: [echoTool],
      steps: [toolTurn, { text: "done" }],
      handlers: {
        echo: async () => {
          expect(await current().engine.setThinkingLevel("high")).toBe("buffered");
          expect(await current().engine.appendMessage(custom("mid-run"))).toBe("buffered");
          return ok();
        },
      },
      hooks: {
        transformContext: async (messages) => {
          contexts.set(current(), [...(contexts.get(current()) ?? []), messages.length]);
          return messages;
        },
      },
    }));
    expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
    const events = trace(core.rec.events);
    const at = events.indexOf("turn_end[t1]");
    expect(events.slice(at, at + 7)).toEqual([
      "turn_end[t1]",
      "thinking_level_change(high)",
      "message_start:custom(note)",
      "message_end:custom(note)",
      "turn_start",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
    ]);
    expect(contexts.get(core)).toEqual([1, 4]);
    expect(contexts.get(core)).toEqual(contexts.get(own));
    expect(core.provider.requests[1]?.options.thinkingLevel).toBe("high");
    // the flushed events are the ones their pending_write named
    const level = core.rec.events.find((e) => e.body.type === "thinking_level_change");
    const pending = core.rec.events.find((e) => e.body.type === "pending_write")?.body;
    expect(pending).toMatchObject({ eventId: level?.id });
    expect(core.engine.state.pendingWrites).toBe(0);
  });

  it("a model change during the last turn's tool call applies to the next turn; a late write flushes before agent_end", async () => {
    const { own, core } = await both((current) => ({
      tools: [echoTool, { ...echoTool, name: "other" }],
      steps: [toolTurn, { text: "done" }],
      hooks: {
        shouldStopAfterTurn: ({ toolResults }) => {
          if (toolResults.length === 0) void current().engine.setName("named late");
          return false;
        },
      },
      handlers: {
        echo: async () => {
          await current().engine.setModel({ provider: "p2", modelId: "m2" });
          await current().engine.setActiveTools(["other"]);
          return ok();
        },
      },
    }));
    expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
    expect(core.provider.requests[1]?.options.model).toEqual({ provider: "p2", modelId: "m2" });
    expect(core.provider.requests[1]?.context.tools.map((tool) => tool.name)).toEqual(["other"]);
    expect(core.undecided).toBe(0);
  });

  it("an abort accepted on the fold ends the run at the turn's end, before the engine's signal aborts", async () => {
    let t: TestEngine | undefined;
    const options: Options = {
      tools: [echoTool],
      // without the abort the run would call the LLM again and end with "never"
      steps: [toolTurn, { text: "never" }],
      handlers: {
        echo: async () => {
          // The shell's abort: `command_accepted {abort}` is on the log; the engine is told later.
          const meta = { v: 1 as const, id: "abort-1", sessionId: TEST_SESSION_ID, ts: T0, producer: "test" };
          const accepted = { type: "command_accepted", commandId: "c-abort", commandType: "abort", meta };
          const { evolveSession } = await import("@fleet/protocol");
          evolveSession((t as TestEngine).session, accepted as FleetEvent);
          return ok();
        },
      },
    };
    const core = wired(options);
    t = core;
    await core.engine.prompt("go");
    expect(trace(core.rec.events).slice(-3)).toEqual(["message_end:toolResult(t1)", "turn_end[t1]", "agent_end(3)"]);
    expect(core.provider.requests).toHaveLength(1);
    expect(core.undecided).toBe(0);
    // and the engine's own, told nothing, goes on to its next turn
    const own = testEngine(options);
    t = own;
    await own.engine.prompt("go");
    expect(own.provider.requests).toHaveLength(2);
  });
});

describe("a live run's turn boundaries through decideInput", () => {
  /** A tool that queues S1, S2 (steer) and F1, F2 (follow-up) while it runs. */
  const queueing = (get: () => TestEngine) => ({
    echo: async () => {
      const e = get().engine;
      await e.steer(user("S1"));
      await e.steer(user("S2"));
      await e.followUp(user("F1"));
      await e.followUp(user("F2"));
      return ok();
    },
  });

  it.each(["one-at-a-time", "all"] as const)(
    "steering and follow-ups polled by the fold (%s): the trace, the LLM's contexts and the run's messages are the engine's own",
    async (mode) => {
      const { own, core } = await both((current) => ({
        tools: [echoTool],
        handlers: queueing(current),
        steps: [toolTurn, { text: "a1" }, { text: "a2" }, { text: "a3" }, { text: "a4" }, { text: "a5" }],
        config: { steeringMode: mode, followUpMode: mode },
      }));
      expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
      expect(trace(core.rec.events)).toContain("message_end:user(F2)");
      expect(core.provider.requests.map((r) => r.context.messages.length)).toEqual(
        own.provider.requests.map((r) => r.context.messages.length),
      );
      expect(core.rec.events.at(-1)?.body).toEqual(own.rec.events.at(-1)?.body);
      expect(core.engine.state.messages).toEqual(own.engine.state.messages);
      // every turn past the first was started by the core, and the run's end too
      const starts = idsOf(core, "turn_start");
      expect(starts.slice(1).every((id) => id.startsWith("core-"))).toBe(true);
      expect(idsOf(core, "agent_end")).toEqual([expect.stringMatching(/^core-/)]);
      expect(core.undecided).toBe(0);
    },
  );

  it("shouldStopAfterTurn ends the run past the hooks: agent_end decided by the core", async () => {
    const { own, core } = await both(() => ({
      tools: [echoTool],
      handlers: { echo: ok },
      steps: [toolTurn, { text: "never" }],
      hooks: { shouldStopAfterTurn: () => true },
    }));
    expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
    expect(trace(core.rec.events).slice(-2)).toEqual(["turn_end[t1]", "agent_end(3)"]);
    expect(idsOf(core, "agent_end")).toEqual([expect.stringMatching(/^core-/)]);
    expect(core.provider.requests).toHaveLength(1);
  });
});

describe("a live run's provider chunks through decideInput", () => {
  it("every chunk is decided on the fold: message_start and each message_update are the core's, as the engine would emit them", async () => {
    const { own, core } = await both(() => ({
      tools: [echoTool],
      steps: [toolTurn, { text: "Hello there, world" }],
      handlers: { echo: ok },
      chunkChars: 4,
    }));
    expect(trace(core.rec.events, { updates: true })).toEqual(trace(own.rec.events, { updates: true }));
    const streamed = (t: TestEngine) =>
      t.rec.events.filter(
        (e) =>
          e.body.type === "message_update" || (e.body.type === "message_start" && e.body.message.role === "assistant"),
      );
    expect(streamed(core).map((e) => e.body)).toEqual(streamed(own).map((e) => e.body));
    expect(streamed(core).length).toBeGreaterThan(8);
    for (const e of streamed(core)) expect(e.id).toMatch(/^core-/);
    expect(core.undecided).toBe(0);
  });

  it("an abort mid-stream: the aborted message_end is the core's, with the content streamed so far", async () => {
    const core = wired({ steps: [{ text: "Hello world" }], chunkChars: 5 });
    core.rec.listen((e) => {
      if (e.body.type === "message_update" && e.body.deltas[0]?.type === "text_delta") core.engine.abort();
    });
    await core.engine.prompt("go");
    expect(trace(core.rec.events, { updates: true }).slice(-5)).toEqual([
      "message_update:text_start",
      "message_update:text_delta",
      "message_end:assistant(aborted)",
      "turn_end[]",
      "agent_end(2)",
    ]);
    const end = core.rec.events.find((e) => e.body.type === "message_end" && e.body.message.role === "assistant");
    expect(end?.id).toMatch(/^core-/);
    expect(end?.body).toMatchObject({
      message: {
        content: [{ type: "text", text: "Hello" }],
        stopReason: "aborted",
        errorMessage: ABORTED_ERROR_MESSAGE,
      },
    });
    expect(core.undecided).toBe(0);
  });

  it("a stream that stops without done or error: the errored message_end is the core's", async () => {
    const stream: StreamFn = () =>
      (async function* () {
        const partial = assistantMessage([]);
        yield { type: "start", partial } as AssistantStreamEvent;
        yield { type: "text_start", contentIndex: 0 } as AssistantStreamEvent;
        yield { type: "text_delta", contentIndex: 0, delta: "cut" } as AssistantStreamEvent;
      })();
    const { own, core } = await both(() => ({ streamFn: stream }));
    expect(trace(core.rec.events, { updates: true })).toEqual(trace(own.rec.events, { updates: true }));
    const end = core.rec.events.find((e) => e.body.type === "message_end" && e.body.message.role === "assistant");
    expect(end?.id).toMatch(/^core-/);
    expect(end?.body).toMatchObject({
      message: { content: [{ type: "text", text: "cut" }], stopReason: "error", errorMessage: STREAM_ENDED_EARLY },
    });
    expect(core.engine.state.messages).toEqual(own.engine.state.messages);
    expect(core.undecided).toBe(0);
  });

  it("each call's message_end is decided on the fold; the trace and the messages are the engine's own", async () => {
    const { own, core } = await both(() => ({
      tools: [echoTool],
      steps: [toolTurn, { text: "done" }],
      handlers: { echo: ok },
    }));
    expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
    const assistantEnds = core.rec.events.filter(
      (e) => e.body.type === "message_end" && e.body.message.role === "assistant",
    );
    expect(assistantEnds.map((e) => e.id)).toEqual([expect.stringMatching(/^core-/), expect.stringMatching(/^core-/)]);
    expect(core.engine.state.messages).toEqual(own.engine.state.messages);
    expect(core.provider.requests[1]?.context.messages).toEqual(own.provider.requests[1]?.context.messages);
    expect(core.undecided).toBe(0);
  });

  it("an error chunk: the errored message is the core's, and ends the run", async () => {
    const { own, core } = await both(() => ({ steps: [{ error: "provider down" }] }));
    expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
    const end = core.rec.events.find((e) => e.body.type === "message_end" && e.body.message.role === "assistant");
    expect(end?.id).toMatch(/^core-/);
    expect(end?.body).toMatchObject({ message: { stopReason: "error", errorMessage: "provider down" } });
  });

  it("an error chunk whose text reads like a cut close: one call, and the run ends on it, written `Error: …`", async () => {
    const lookalike = interruptedErrorMessage("upstream proxy");
    const core = wired({ steps: [{ error: lookalike }, { text: "never" }] });
    await core.engine.prompt("go");
    expect(core.provider.requests).toHaveLength(1);
    expect(trace(core.rec.events).slice(-3)).toEqual(["message_end:assistant(error)", "turn_end[]", "agent_end(2)"]);
    const end = core.rec.events.find((e) => e.body.type === "message_end" && e.body.message.role === "assistant");
    expect(end?.id).toMatch(/^core-/);
    expect(end?.body).toMatchObject({ message: { stopReason: "error", errorMessage: `Error: ${lookalike}` } });
  });

  it("a stream that ends before its start chunk: message_start and message_end both decided", async () => {
    const stream: StreamFn = () =>
      (async function* () {
        yield { type: "done", reason: "stop", message: assistantMessage([textOf("quick")]) } as AssistantStreamEvent;
      })();
    const { own, core } = await both(() => ({ streamFn: stream }));
    expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
    const ids = core.rec.events
      .filter(
        (e) =>
          (e.body.type === "message_start" || e.body.type === "message_end") && e.body.message.role === "assistant",
      )
      .map((e) => e.id);
    expect(ids).toEqual([expect.stringMatching(/^core-/), expect.stringMatching(/^core-/)]);
  });
});

describe("a resumed run's cut stream through decideInput", () => {
  /** A streamed answer's log, cut after its first delta, as the next owner folds it. */
  async function cutLog() {
    const first = testEngine({ steps: [{ text: "Hello world" }], chunkChars: 2 });
    await first.engine.prompt("go");
    const prompt = first.rec.events.find((e) => e.body.type === "message_start")?.body;
    if (prompt?.type !== "message_start") throw new Error("no prompt message");
    const accepted = {
      type: "command_accepted",
      commandId: "c1",
      commandType: "prompt",
      messages: [prompt.message],
      meta: { v: 1, id: "a1", sessionId: TEST_SESSION_ID, ts: T0, producer: "test" },
    } as FleetEvent;
    const firstDelta = first.rec.events.findIndex((e) => e.body.type === "message_update");
    return [accepted, ...first.rec.events.slice(0, firstDelta + 1).map(toFleetEvent)];
  }

  /** The core-wired engine of the owner that loads `log`, resumed where its run cursor stands. */
  function resumeWired(log: readonly FleetEvent[], options: Options = {}) {
    const session = sessionAt({});
    for (const event of log) evolveSession(session, event);
    const t = wired({ ...options, session });
    const point = resumePointFromCursor(findRunCursor(log), "owner changed");
    if (!point) throw new Error("no open run");
    return { t, point };
  }

  it("the cut message's close, its turn_end and the call made again are decided by the core", async () => {
    const { t, point } = resumeWired(await cutLog(), { steps: [{ text: "again" }] });
    expect(point.at).toBe("streaming");
    await t.engine.resume(point);
    expect(trace(t.rec.events)).toEqual([
      "run_resumed(owner changed)",
      "message_end:assistant(error)",
      "turn_end[]",
      "turn_start",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(3)",
    ]);
    expect(t.undecided).toBe(0);
    expect(idsOf(t, "turn_end")).toEqual([expect.stringMatching(/^core-/), expect.stringMatching(/^core-/)]);
    expect(idsOf(t, "turn_start")).toEqual([expect.stringMatching(/^core-/)]);
  });

  it("an owner that stops right after the close's turn_end: the next one still makes the call again", async () => {
    const log = await cutLog();
    const second = resumeWired(log, { steps: [{ text: "lost" }] });
    await second.t.engine.resume(second.point);
    const closeEnd = second.t.rec.events.findIndex((e) => e.body.type === "turn_end");
    const cutAgain = [...log, ...second.t.rec.events.slice(0, closeEnd + 1).map(toFleetEvent)];
    const { t, point } = resumeWired(cutAgain, { steps: [{ text: "again" }] });
    expect(point.at).toBe("between_turns");
    await t.engine.resume(point);
    expect(trace(t.rec.events)).toEqual([
      "run_resumed(owner changed)",
      "turn_start",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(3)",
    ]);
    expect(t.provider.requests).toHaveLength(1);
    expect(t.undecided).toBe(0);
    // Cut between the close and its turn_end: the same.
    const beforeTurnEnd = [...log, ...second.t.rec.events.slice(0, closeEnd).map(toFleetEvent)];
    const third = resumeWired(beforeTurnEnd, { steps: [{ text: "again" }] });
    expect(third.point.at).toBe("awaiting_turn_end");
    await third.t.engine.resume(third.point);
    expect(trace(third.t.rec.events).slice(1, 4)).toEqual(["turn_end[]", "turn_start", "message_start:assistant(…)"]);
    expect(third.t.undecided).toBe(0);
  });

  it("an abort once the cut message is closed: the call made again ends aborted at once", async () => {
    const { t, point } = resumeWired(await cutLog(), { steps: [{ text: "never" }] });
    t.rec.listen((e) => {
      if (e.body.type === "message_end" && e.body.message.role === "assistant") t.engine.abort();
    });
    await t.engine.resume(point);
    expect(trace(t.rec.events).slice(-4)).toEqual([
      "message_start:assistant(…)",
      "message_end:assistant(aborted)",
      "turn_end[]",
      "agent_end(3)",
    ]);
    expect(t.provider.requests).toHaveLength(0);
    expect(t.undecided).toBe(0);
  });
});
