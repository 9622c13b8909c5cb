import { createScriptedProvider, type ScriptStep } from "@fleet/loop";
import { encodeCommand, type FleetEvent, foldAgentEvents } from "@fleet/protocol";
import { sleep as realSleep } from "@fleet/runtime";
import { defineTool } from "@fleet/tools";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type commander, notation, startLoopStack } from "../support/loop-harness.js";

let stack: Awaited<ReturnType<typeof startLoopStack>>;
let cmd: ReturnType<typeof commander>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const slow = defineTool({
  name: "slow",
  description: "waits ms milliseconds, reporting progress, then echoes its tag",
  parameters: z.object({ tag: z.string(), ms: z.number().int().nonnegative() }),
  async execute(args, ctx) {
    ctx.onUpdate({ tag: args.tag, phase: "started" });
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(resolve, args.ms);
      ctx.signal.addEventListener("abort", () => {
        clearTimeout(t);
        reject(new Error("Operation aborted"));
      });
    });
    return { content: [{ type: "text", text: `done ${args.tag}` }] };
  },
});
const serial = defineTool({
  name: "serial",
  description: "a tool that must run alone",
  parameters: z.object({ tag: z.string() }),
  executionMode: "sequential",
  async execute(args) {
    await sleep(30);
    return { content: [{ type: "text", text: `serial ${args.tag}` }] };
  },
});

beforeAll(async () => {
  stack = await startLoopStack({ tools: [slow, serial] });
  cmd = stack.cmd;
});
afterAll(async () => {
  await stack?.stop();
});

const script = (...steps: ScriptStep[]) =>
  stack.scripted.use(createScriptedProvider({ steps, now: () => 1_000, sleep: realSleep, chunkChars: 8 }).streamFn);
const call = (id: string, name: string, args: Record<string, unknown>) => ({
  type: "toolCall" as const,
  id,
  name,
  arguments: args,
});
const ended = (events: FleetEvent[]) => events.some((e) => e.type === "agent_end");
const fromRun = (events: FleetEvent[]) => notation(events.slice(events.findIndex((e) => e.type === "agent_start")));

describe("loop service / tool calls through a real runner", () => {
  it("runs a parallel batch: ends in completion order, results in source order", async () => {
    script(
      { content: [call("t1", "slow", { tag: "a", ms: 300 }), call("t2", "slow", { tag: "b", ms: 10 })] },
      { text: "both done" },
    );
    await cmd.send("tools-1", { type: "prompt", text: "go" });
    const events = await cmd.waitFor("tools-1", ended);
    const ends = events
      .filter((e) => e.type === "tool_execution_end")
      .map((e) => (e as { toolCallId: string }).toolCallId);
    expect(ends).toEqual(["t2", "t1"]);
    const turnEnd = events.find((e) => e.type === "turn_end" && e.toolResults.length === 2);
    expect(turnEnd?.type === "turn_end" && turnEnd.toolResults.map((r) => r.toolCallId)).toEqual(["t1", "t2"]);
    expect(turnEnd?.type === "turn_end" && turnEnd.toolResults.map((r) => r.content)).toEqual([
      [{ type: "text", text: "done a" }],
      [{ type: "text", text: "done b" }],
    ]);
    const seq = fromRun(events).filter((e) => !e.startsWith("tool_update"));
    expect(seq).toEqual([
      "agent_start",
      "turn_start",
      "ms:user",
      "me:user",
      "ms:assistant",
      "me:assistant(toolUse)",
      "tool_start:slow",
      "tool_start:slow",
      "tool_end:slow",
      "tool_end:slow",
      "ms:toolResult",
      "me:toolResult",
      "ms:toolResult",
      "me:toolResult",
      "turn_end",
      "turn_start",
      "ms:assistant",
      "me:assistant(stop)",
      "turn_end",
      "agent_end",
    ]);
    expect(events.some((e) => e.type === "tool_execution_update")).toBe(true);
  });

  it("a sequential tool makes the whole batch sequential", async () => {
    script({ content: [call("s1", "serial", { tag: "x" }), call("s2", "slow", { tag: "y", ms: 5 })] }, { text: "ok" });
    await cmd.send("tools-2", { type: "prompt", text: "go" });
    const events = await cmd.waitFor("tools-2", ended);
    const seq = fromRun(events).filter((e) => !e.startsWith("tool_update"));
    expect(seq.slice(5, 13)).toEqual([
      "me:assistant(toolUse)",
      "tool_start:serial",
      "tool_end:serial",
      "ms:toolResult",
      "me:toolResult",
      "tool_start:slow",
      "tool_end:slow",
      "ms:toolResult",
    ]);
  });

  it("unknown tools and invalid arguments become pi's error results without reaching a runner", async () => {
    script({ content: [call("u1", "nope", {}), call("u2", "slow", { tag: 3 })] }, { text: "ok" });
    await cmd.send("tools-3", { type: "prompt", text: "go" });
    const events = await cmd.waitFor("tools-3", ended);
    const results = events.filter((e) => e.type === "tool_execution_end");
    expect(results.map((e) => e.type === "tool_execution_end" && e.isError)).toEqual([true, true]);
    const texts = results.map((e) =>
      e.type === "tool_execution_end" ? (e.result.content[0] as { text: string }).text : "",
    );
    expect(texts[0]).toBe("Tool nope not found");
    expect(texts[1]).toMatch(/^Validation failed for tool "slow":\n {2}- /);
  });
});

describe("loop service / queues over commands", () => {
  it("steer and follow_up sent while a tool runs are injected after the batch, in pi's order", async () => {
    script(
      { content: [call("q1", "slow", { tag: "a", ms: 400 })] },
      { text: "after steer" },
      { text: "after follow-up" },
    );
    await cmd.send("queue-1", { type: "prompt", text: "go" });
    await cmd.waitFor("queue-1", (ev) => ev.some((e) => e.type === "tool_execution_start"));
    await cmd.send("queue-1", { type: "follow_up", text: "F1" });
    await cmd.send("queue-1", { type: "steer", text: "S1" });
    const events = await cmd.waitFor("queue-1", ended);
    const users = events
      .filter((e) => e.type === "message_end" && e.message.role === "user")
      .map((e) =>
        e.type === "message_end" && e.message.role === "user" ? (e.message.content as { text: string }[])[0]?.text : "",
      );
    expect(users).toEqual(["go", "S1", "F1"]);
    expect(fromRun(events).filter((e) => e === "turn_start").length).toBe(3);
  });

  it("next_turn messages go before the next prompt's message", async () => {
    script({ text: "one" });
    await cmd.send("queue-2", { type: "create_session" });
    await cmd.send("queue-2", { type: "next_turn", text: "context first" });
    await cmd.send("queue-2", { type: "prompt", text: "then the prompt" });
    const events = await cmd.waitFor("queue-2", ended);
    const users = events
      .filter((e) => e.type === "message_end" && e.message.role === "user")
      .map((e) =>
        e.type === "message_end" && e.message.role === "user" ? (e.message.content as { text: string }[])[0]?.text : "",
      );
    expect(users).toEqual(["context first", "then the prompt"]);
    const queueUpdates = events.filter((e) => e.type === "queue_update");
    expect(queueUpdates.map((q) => (q.type === "queue_update" ? q.nextTurn.length : -1))).toEqual([1, 0]);
  });
});

describe("loop service / abort", () => {
  it("abort while streaming keeps the partial text, stopReason aborted, 'Request was aborted'", async () => {
    script({ text: "x".repeat(400), tokensPerSecond: 100 });
    await cmd.send("abort-1", { type: "prompt", text: "go" });
    await cmd.waitFor("abort-1", (ev) => ev.filter((e) => e.type === "message_update").length >= 2);
    await cmd.send("abort-1", { type: "abort" });
    const events = await cmd.waitFor("abort-1", ended);
    const last = events.filter((e) => e.type === "message_end").at(-1);
    expect(last?.type === "message_end" && last.message.role === "assistant" && last.message.stopReason).toBe(
      "aborted",
    );
    expect(last?.type === "message_end" && last.message.role === "assistant" && last.message.errorMessage).toBe(
      "Request was aborted",
    );
    const text =
      last?.type === "message_end" && last.message.role === "assistant" ? last.message.content[0] : undefined;
    expect(text?.type === "text" && text.text.length).toBeGreaterThan(0);
    expect(text?.type === "text" && text.text.length).toBeLessThan(400);
    expect(fromRun(events).slice(-3)).toEqual(["me:assistant(aborted)", "turn_end", "agent_end"]);
  });

  it("an abort delivered again after its run ended does not abort the next run", async () => {
    script({ text: "x".repeat(400), tokensPerSecond: 100 });
    await cmd.send("abort-again", { type: "prompt", text: "go" });
    await cmd.waitFor("abort-again", (ev) => ev.some((e) => e.type === "message_update"));
    const abortId = await cmd.send("abort-again", { type: "abort" });
    await cmd.waitFor("abort-again", ended);
    script({ text: "y".repeat(800), tokensPerSecond: 100 });
    await cmd.send("abort-again", { type: "prompt", text: "again" });
    await cmd.waitFor(
      "abort-again",
      (ev) => ev.filter((e) => e.type === "agent_start").length === 2 && ev.at(-1)?.type === "message_update",
    );
    // The same command stored again (another msgID: as an intake sweep or a re-store delivers it).
    const again = encodeCommand({ type: "abort", id: abortId, sessionId: "abort-again" });
    if (!again.ok) throw new Error(again.error);
    await cmd.sendRaw("abort-again", again.bytes, `${abortId}#again`);
    const events = await cmd.waitFor("abort-again", (ev) => ev.filter((e) => e.type === "agent_end").length === 2);
    const second = events.slice(events.findLastIndex((e) => e.type === "agent_start"));
    const end = second.findLast((e) => e.type === "message_end");
    expect(end?.type === "message_end" && end.message.role === "assistant" && end.message.stopReason).toBe("stop");
    expect(events.filter((e) => e.type === "command_accepted" && e.commandId === abortId)).toHaveLength(1);
  });

  it("abort while a tool runs cancels it on the runner: Operation aborted, then the run ends (no empty aborted turn)", async () => {
    script({ content: [call("a1", "slow", { tag: "long", ms: 20_000 })] }, { text: "never" });
    await cmd.send("abort-2", { type: "prompt", text: "go" });
    await cmd.waitFor("abort-2", (ev) => ev.some((e) => e.type === "tool_execution_update"));
    const t0 = Date.now();
    await cmd.send("abort-2", { type: "abort" });
    const events = await cmd.waitFor("abort-2", ended);
    expect(Date.now() - t0).toBeLessThan(5_000);
    const end = events.find((e) => e.type === "tool_execution_end");
    expect(end?.type === "tool_execution_end" && end.isError).toBe(true);
    expect(end?.type === "tool_execution_end" && (end.result.content[0] as { text: string }).text).toBe(
      "Operation aborted",
    );
    expect(fromRun(events).slice(-4)).toEqual(["ms:toolResult", "me:toolResult", "turn_end", "agent_end"]);
    const state = foldAgentEvents(events);
    expect(state.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
  });
});

describe("loop service / settings during a run", () => {
  it("settings and tree changes sent during a run are buffered and appended at the next turn_end, in order", async () => {
    script({ content: [call("w1", "slow", { tag: "a", ms: 400 })] }, { text: "done" });
    await cmd.send("writes-1", { type: "prompt", text: "go" });
    await cmd.waitFor("writes-1", (ev) => ev.some((e) => e.type === "tool_execution_start"));
    await cmd.send("writes-1", { type: "set_thinking_level", level: "high" });
    await cmd.send("writes-1", { type: "set_name", name: "buffered" });
    await cmd.send("writes-1", { type: "append_custom", customType: "note", data: { n: 1 } });
    const events = await cmd.waitFor("writes-1", ended);
    const types = notation(events);
    const firstTurnEnd = types.indexOf("turn_end");
    expect(types.slice(firstTurnEnd, firstTurnEnd + 4)).toEqual([
      "turn_end",
      "thinking_level_change",
      "session_info",
      "custom",
    ]);
    // The outcomes were appended at once, while the tool ran.
    expect(types.indexOf("command_accepted", types.indexOf("tool_start:slow"))).toBeLessThan(firstTurnEnd);
  });
});
