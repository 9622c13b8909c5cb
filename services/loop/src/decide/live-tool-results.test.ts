// A live run's tool results are inputs of the runtime core: the engine's batch asks the port the
// shell wires to `decideInput {tool_result}` on the session's fold, and emits what it decided,
// in pi's order (the same trace as the engine's own step).
import { describe, expect, it } from "vitest";
import {
  deferred,
  echoTool,
  type Recorder,
  T0,
  TEST_SESSION_ID,
  testEngine,
  trace,
} from "../engine/testing/harness.js";
import type { EnginePorts } from "../engine/types.js";
import { SPEC_DEFAULTS } from "../testing/decider-spec.js";
import { decideInput } from "./decide-input.js";

const ok = (text: string) => ({ content: [{ type: "text" as const, text }] });
const call = (id: string) => ({ type: "toolCall" as const, id, name: "echo", arguments: { text: id } });

/** t1 finishes only after t2's tool_execution_end went out (completion order t2, t1). */
const slowT1 = (rec: Recorder) => {
  const t2Ended = deferred();
  rec.listen((e) => {
    if (e.body.type === "tool_execution_end" && e.body.toolCallId === "t2") t2Ended.resolve();
  });
  return {
    echo: async (args: unknown, _s: AbortSignal | undefined, _u: (p: unknown) => void, id: string) => {
      if (id === "t1") await t2Ended.promise;
      return ok((args as { text: string }).text);
    },
  };
};

function run(sequential: boolean, wired: boolean) {
  const t = testEngine({
    tools: [echoTool],
    steps: [{ content: [call("t1"), call("t2")] }, { text: "done" }],
    // Sequential: t1 runs alone first, so it cannot wait for t2.
    handlers: sequential ? { echo: async (args: unknown) => ok((args as { text: string }).text) } : slowT1,
    ...(sequential ? { config: { toolExecution: "sequential" as const } } : {}),
  });
  const asked: string[] = [];
  if (wired) {
    let n = 0;
    const decide: EnginePorts["decideToolResult"] = (input) => {
      asked.push(input.toolCallId);
      const decision = decideInput(t.session, TEST_SESSION_ID, input, {
        now: T0,
        newId: () => `core-${++n}`,
        defaults: SPEC_DEFAULTS,
        isKnownTool: () => true,
      });
      return decision.kind === "decided" && decision.events.length > 0 ? decision.events : undefined;
    };
    t.ports.decideToolResult = decide;
  }
  return { ...t, asked };
}

describe("a live run's tool results through decideInput", () => {
  it("parallel: each result is decided on the fold as it is delivered; the trace is the engine's own", async () => {
    const own = run(false, false);
    await own.engine.prompt("go");
    const core = run(false, true);
    await core.engine.prompt("go");
    expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
    expect(core.asked).toEqual(["t2", "t1"]);
    // What went out is what the core decided: its ids.
    const decided = core.rec.events.filter(
      (e) =>
        e.body.type === "tool_execution_end" || (e.body.type === "message_end" && e.body.message.role === "toolResult"),
    );
    expect(decided.map((e) => e.id)).toEqual(["core-1", "core-2", "core-4", "core-6"]);
    expect(core.engine.state.messages.filter((m) => m.role === "toolResult").map((m) => m.toolCallId)).toEqual([
      "t1",
      "t2",
    ]);
  });

  it("sequential: end and toolResult message per call, decided by the core", async () => {
    const own = run(true, false);
    await own.engine.prompt("go");
    const core = run(true, true);
    await core.engine.prompt("go");
    expect(trace(core.rec.events)).toEqual(trace(own.rec.events));
    expect(core.asked).toEqual(["t1", "t2"]);
  });
});
