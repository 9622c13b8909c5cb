// Steering, follow-up and nextTurn queues: poll points, modes, queue_update durability.
import { describe, expect, it } from "vitest";
import type { SessionEngine } from "./session-engine.js";
import { echoTool, testEngine, trace, user } from "./testing/harness.js";

const toolTurn = { content: [{ type: "toolCall" as const, id: "t1", name: "echo", arguments: { text: "x" } }] };
const reply = (text: string) => ({ text });

/** A tool that queues S1, S2 (steer) and F1, F2 (follow-up) while it runs. */
const queueingTool = (get: () => SessionEngine) => ({
  echo: async () => {
    const engine = get();
    await engine.steer(user("S1"));
    await engine.steer(user("S2"));
    await engine.followUp(user("F1"));
    await engine.followUp(user("F2"));
    return { content: [{ type: "text" as const, text: "x" }] };
  },
});

const batchHead = [
  "agent_start",
  "turn_start",
  "message_start:user(go)",
  "message_end:user(go)",
  "message_start:assistant(…)",
  "message_end:assistant(toolUse)",
  "tool_execution_start:t1",
  "queue_update(s1,f0,n0)",
  "queue_update(s2,f0,n0)",
  "queue_update(s2,f1,n0)",
  "queue_update(s2,f2,n0)",
  "tool_execution_end:t1",
  "message_start:toolResult(t1)",
  "message_end:toolResult(t1)",
  "turn_end[t1]",
];
const answer = ["message_start:assistant(…)", "message_end:assistant(stop)", "turn_end[]"];

describe("queues", () => {
  it("one-at-a-time: steering after the batch, one message per turn; follow-ups only when the run would stop", async () => {
    const t = testEngine({
      tools: [echoTool],
      handlers: queueingTool(() => t.engine),
      steps: [toolTurn, reply("a1"), reply("a2"), reply("a3"), reply("a4")],
    });
    await t.engine.prompt("go");
    expect(trace(t.rec.events)).toEqual([
      ...batchHead,
      "turn_start",
      "queue_update(s1,f2,n0)",
      "message_start:user(S1)",
      "message_end:user(S1)",
      ...answer,
      "turn_start",
      "queue_update(s0,f2,n0)",
      "message_start:user(S2)",
      "message_end:user(S2)",
      ...answer,
      "turn_start",
      "queue_update(s0,f1,n0)",
      "message_start:user(F1)",
      "message_end:user(F1)",
      ...answer,
      "turn_start",
      "queue_update(s0,f0,n0)",
      "message_start:user(F2)",
      "message_end:user(F2)",
      ...answer,
      "agent_end(11)",
    ]);
  });

  it("all: every queued steering message in one turn, then every follow-up in one turn", async () => {
    const t = testEngine({
      tools: [echoTool],
      config: { steeringMode: "all", followUpMode: "all" },
      handlers: queueingTool(() => t.engine),
      steps: [toolTurn, reply("a1"), reply("a2")],
    });
    await t.engine.prompt("go");
    expect(trace(t.rec.events)).toEqual([
      ...batchHead,
      "turn_start",
      "queue_update(s0,f2,n0)",
      "message_start:user(S1)",
      "message_end:user(S1)",
      "message_start:user(S2)",
      "message_end:user(S2)",
      ...answer,
      "turn_start",
      "queue_update(s0,f0,n0)",
      "message_start:user(F1)",
      "message_end:user(F1)",
      "message_start:user(F2)",
      "message_end:user(F2)",
      ...answer,
      "agent_end(9)",
    ]);
  });

  it("pre-queued steering joins the first turn after the prompt (one-at-a-time: one per turn)", async () => {
    const { engine, rec } = testEngine({
      steps: [reply("a1"), reply("a2")],
      init: { queues: { steer: [user("pre1"), user("pre2")], followUp: [], nextTurn: [] } },
    });
    await engine.prompt("hi");
    expect(trace(rec.events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user(hi)",
      "message_end:user(hi)",
      "queue_update(s1,f0,n0)",
      "message_start:user(pre1)",
      "message_end:user(pre1)",
      ...answer,
      "turn_start",
      "queue_update(s0,f0,n0)",
      "message_start:user(pre2)",
      "message_end:user(pre2)",
      ...answer,
      "agent_end(5)",
    ]);
  });

  it("pre-queued steering with mode all: both in the first turn", async () => {
    const { engine, rec } = testEngine({
      steps: [reply("a1")],
      config: { steeringMode: "all" },
      init: { queues: { steer: [user("pre1"), user("pre2")], followUp: [], nextTurn: [] } },
    });
    await engine.prompt("hi");
    expect(trace(rec.events).slice(2, 9)).toEqual([
      "message_start:user(hi)",
      "message_end:user(hi)",
      "queue_update(s0,f0,n0)",
      "message_start:user(pre1)",
      "message_end:user(pre1)",
      "message_start:user(pre2)",
      "message_end:user(pre2)",
    ]);
  });

  it("nextTurn messages go before the prompt's message; their drain's queue_update comes just before", async () => {
    const { engine, rec } = testEngine({ steps: [reply("a1")] });
    await engine.nextTurn({ role: "custom", customType: "note", content: "NT", display: false, timestamp: 5 });
    await engine.prompt("hi");
    expect(trace(rec.events)).toEqual([
      "queue_update(s0,f0,n1)",
      "agent_start",
      "turn_start",
      "queue_update(s0,f0,n0)",
      "message_start:custom(note)",
      "message_end:custom(note)",
      "message_start:user(hi)",
      "message_end:user(hi)",
      ...answer,
      "agent_end(3)",
    ]);
  });

  it("queue_update carries the full contents; steer and follow-up while idle wait for the next run", async () => {
    const { engine, rec } = testEngine({ steps: [reply("a1"), reply("a2")] });
    await engine.steer(user("S"));
    await engine.followUp(user("F"));
    expect(rec.events.map((e) => e.body)).toEqual([
      { type: "queue_update", steer: [user("S")], followUp: [], nextTurn: [] },
      { type: "queue_update", steer: [user("S")], followUp: [user("F")], nextTurn: [] },
    ]);
    expect(rec.events.every((e) => e.runId === undefined)).toBe(true);
    expect(engine.state.queues).toEqual({ steer: [user("S")], followUp: [user("F")], nextTurn: [] });
    await engine.prompt("hi");
    expect(trace(rec.events).slice(2)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user(hi)",
      "message_end:user(hi)",
      "queue_update(s0,f1,n0)",
      "message_start:user(S)",
      "message_end:user(S)",
      ...answer,
      "turn_start",
      "queue_update(s0,f0,n0)",
      "message_start:user(F)",
      "message_end:user(F)",
      ...answer,
      "agent_end(5)",
    ]);
  });

  it("messages polled but not yet injected are still reported as queued", async () => {
    const t = testEngine({
      tools: [echoTool],
      handlers: queueingTool(() => t.engine),
      steps: [toolTurn, reply("a1"), reply("a2"), reply("a3"), reply("a4")],
    });
    const seen: unknown[] = [];
    t.rec.listen((e) => {
      if (e.body.type === "turn_start")
        seen.push(t.engine.state.queues.steer.length + t.engine.state.queues.followUp.length);
    });
    await t.engine.prompt("go");
    // at each turn_start after the batch, the message about to be injected still counts
    expect(seen).toEqual([0, 4, 3, 2, 1]);
  });

  it("clearQueues empties queues and emits one queue_update", async () => {
    const { engine, rec } = testEngine({
      init: { queues: { steer: [user("S")], followUp: [user("F")], nextTurn: [user("N")] } },
    });
    const cleared = await engine.clearQueues(["steer", "followUp"]);
    expect(cleared).toEqual({ steer: [user("S")], followUp: [user("F")], nextTurn: [] });
    expect(trace(rec.events)).toEqual(["queue_update(s0,f0,n1)"]);
    await engine.clearQueues(["steer"]);
    expect(rec.events).toHaveLength(1);
  });
});
