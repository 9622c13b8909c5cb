// A live run's turn ends are inputs of the runtime core: the engine asks the port the shell wires to
// `decideInput {turn_end}` on the session's fold, and emits what it decided (`turn_end`, the writes
// flushed at it, `agent_end` when the fold ends the run there), in pi's order: the same trace as
// the engine's own. The fold's accepted abort ends the run at the turn's end even before the
// engine's signal aborts.
import type { AgentMessage, FleetEvent } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { echoTool, T0, TEST_SESSION_ID, type TestEngine, testEngine, trace } from "../engine/testing/harness.js";
import { flushDrafts } from "../session-core/session-write.js";
import { turnEndBody } from "../session-core/turn-boundary.js";
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

/** The engine with both run inputs wired to `decideInput` on its fold, as the shell wires them. */
function wired(options: Options): TestEngine & { undecided: number } {
  const t = testEngine(options);
  let n = 0;
  const ctx = () => ({ now: T0, newId: () => `core-${++n}`, defaults: SPEC_DEFAULTS, isKnownTool: () => true });
  const out = { ...t, undecided: 0 };
  t.ports.decideToolResult = (input) => {
    const decision = decideInput(t.session, TEST_SESSION_ID, input, ctx());
    return decision.kind === "decided" && decision.events.length > 0 ? decision.events : undefined;
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
  return out;
}

async function both(options: (rec: "own" | "core") => Options, act: (t: TestEngine) => Promise<unknown>) {
  const own = testEngine(options("own"));
  await act(own);
  const core = wired(options("core"));
  await act(core);
  return { own, core };
}

const idsOf = (t: TestEngine, type: string) => t.rec.events.filter((e) => e.body.type === type).map((e) => e.id);

describe("a live run's turn ends through decideInput", () => {
  it("a tool turn and a final turn: each turn_end, and agent_end, decided by the core; the trace is the engine's own", async () => {
    const { own, core } = await both(
      () => ({ tools: [echoTool], steps: [toolTurn, { text: "done" }], handlers: { echo: ok } }),
      (t) => t.engine.prompt("go"),
    );
    expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
    expect(core.rec.events).toHaveLength(own.rec.events.length);
    expect(core.undecided).toBe(0);
    // the core's ids: what went out is what it decided (the run's end here is the boundary's, past the hooks)
    expect(idsOf(core, "turn_end")).toEqual([expect.stringMatching(/^core-/), expect.stringMatching(/^core-/)]);
    expect(core.rec.events.at(-1)?.body).toEqual(own.rec.events.at(-1)?.body);
  });

  it("an errored message ends the run at its turn: agent_end decided with turn_end", async () => {
    const { own, core } = await both(
      () => ({ steps: [{ error: "provider down" }] }),
      (t) => t.engine.prompt("go"),
    );
    expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
    expect(trace(core.rec.events).slice(-2)).toEqual(["turn_end[]", "agent_end(2)"]);
    expect(idsOf(core, "agent_end")[0]).toMatch(/^core-/);
  });

  it("writes made during a tool call are flushed in the decision and reach the next LLM call", async () => {
    const contexts: Record<string, number[]> = { own: [], core: [] };
    let engines: Record<string, TestEngine> = {};
    const { own, core } = await both(
      (kind) => ({
        tools: [echoTool],
        steps: [toolTurn, { text: "done" }],
        handlers: {
          echo: async () => {
            const e = engines[kind] as TestEngine;
            expect(await e.engine.setThinkingLevel("high")).toBe("buffered");
            expect(await e.engine.appendMessage(custom("mid-run"))).toBe("buffered");
            return ok();
          },
        },
        hooks: {
          transformContext: async (messages) => {
            contexts[kind]?.push(messages.length);
            return messages;
          },
        },
      }),
      async (t) => {
        engines = { ...engines, [engines.own ? "core" : "own"]: t };
        await t.engine.prompt("hi");
      },
    );
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
    expect(contexts.core).toEqual([1, 4]);
    expect(contexts.core).toEqual(contexts.own);
    expect(core.provider.requests[1]?.options.thinkingLevel).toBe("high");
    // the flushed events are the ones their pending_write named
    const level = core.rec.events.find((e) => e.body.type === "thinking_level_change");
    const pending = core.rec.events.find((e) => e.body.type === "pending_write")?.body;
    expect(pending).toMatchObject({ eventId: level?.id });
    expect(core.engine.state.pendingWrites).toBe(0);
  });

  it("a model change during the last turn's tool call applies to the next turn; a late write flushes before agent_end", async () => {
    let current: TestEngine | undefined;
    const options = (): Options => ({
      tools: [echoTool, { ...echoTool, name: "other" }],
      steps: [toolTurn, { text: "done" }],
      hooks: {
        shouldStopAfterTurn: ({ toolResults }) => {
          if (toolResults.length === 0) void current?.engine.setName("named late");
          return false;
        },
      },
      handlers: {
        echo: async () => {
          await current?.engine.setModel({ provider: "p2", modelId: "m2" });
          await current?.engine.setActiveTools(["other"]);
          return ok();
        },
      },
    });
    const own = testEngine(options());
    current = own;
    await own.engine.prompt("go");
    const core = wired(options());
    current = core;
    await core.engine.prompt("go");
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
