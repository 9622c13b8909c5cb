// The Done-when of change 57 (sub-agents as child sessions), on real processes: loop workers (the
// service's entry point), nats-server, the Anthropic SDK on the fake. A parent with three parallel
// children survives a SIGKILL of its worker (each child ran once, the parent got all three answers,
// its spend holds theirs); a parent's abort stops its children, also when the parent's worker is
// SIGKILLed as the abort is accepted.
import { randomUUID } from "node:crypto";
import {
  AGENT_TOOL_NAME,
  childCommandIds,
  childSessionId,
  decodeEvent,
  type FleetEvent,
  foldSessionEvents,
  partitionOf,
  subjects,
} from "@fleet/protocol";
import { fakeReply, fakeText, fakeToolUse, type RecordedRequest } from "@fleet/testkit";
import { describe, expect, it } from "vitest";
import { useLoopCrashWorld } from "../support/loop-crash-world.js";
import { commander } from "../support/loop-harness.js";
import { waitForLog } from "../support/loop-process.js";

const CHILD_USAGE = { input_tokens: 1_000, output_tokens: 200 };

/** The first user text of a request (a session's task) and whether it carries tool results. */
function firstUserText(r: RecordedRequest): string {
  const first = r.body?.messages[0] as { content?: unknown } | undefined;
  if (typeof first?.content === "string") return first.content;
  const blocks = Array.isArray(first?.content) ? (first.content as { type: string; text?: string }[]) : [];
  return blocks.map((b) => b.text ?? "").join("");
}
const hasToolResults = (r: RecordedRequest) =>
  (r.body?.messages as { content?: unknown }[] | undefined)?.some(
    (m) => Array.isArray(m.content) && (m.content as { type: string }[]).some((b) => b.type === "tool_result"),
  ) === true;

/**
 * A parent (`fan out: …`) calls `agent` once per task, in one message, then answers with what it got;
 * a child (`task …`) answers `answer of <task>`, slowly (`childDelayMs` per SSE event), or never
 * (`stall`: for the abort test).
 */
function respond(opts: { childDelayMs: number; stall?: boolean }) {
  return (r: RecordedRequest) => {
    const task = firstUserText(r);
    if (task.startsWith("fan out:")) {
      if (hasToolResults(r))
        return fakeReply("all children answered", { usage: { input_tokens: 50, output_tokens: 5 } });
      const tasks = task
        .slice("fan out:".length)
        .split(",")
        .map((t) => t.trim());
      return fakeReply(
        tasks.map((t, i) =>
          fakeToolUse(AGENT_TOOL_NAME, { prompt: `task ${t}`, description: t }, { id: `toolu_${t}_${i}` }),
        ),
        { usage: { input_tokens: 100, output_tokens: 30 } },
      );
    }
    const text = `answer of ${task}`;
    return fakeReply([fakeText(text, text.split(/(?= )/))], {
      usage: CHILD_USAGE,
      eventDelayMs: opts.childDelayMs,
      ...(opts.stall ? { stallAfterEvents: 4 } : {}),
    });
  };
}

const world = useLoopCrashWorld({
  name: "sub-agents-test",
  leaseTtlMs: 1_000,
  env: { FLEET_SUBAGENT_PROGRESS_MS: "200" },
});

const count = (events: FleetEvent[], type: FleetEvent["type"]) => events.filter((e) => e.type === type).length;
const ended = (events: FleetEvent[]) => events.some((e) => e.type === "agent_end");

describe("loop service / sub-agents as child sessions", () => {
  it("three parallel children: the parent's worker is SIGKILLed mid-run; each child ran once, the parent got all three answers and their spend", async () => {
    const a = world.spawn("loop-sub-a");
    await waitForLog(a, "loop_started");
    world.fake.respondWith(respond({ childDelayMs: 300 }));
    const cmd = commander(world.nc);
    const SID = "sub-parent-kill";
    await cmd.send(SID, { type: "prompt", text: "fan out: x, y, z" });
    const children = ["x", "y", "z"].map((t, i) => childSessionId(SID, `toolu_${t}_${i}`));
    // Every child's LLM call has begun, none has ended: A dies with the parent waiting and the children streaming.
    for (let i = 0; i < 400; i++) {
      if (world.fake.requests.filter((r) => firstUserText(r).startsWith("task ")).length >= 3) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const before = await Promise.all(children.map((c) => cmd.events(c)));
    for (const log of before) expect(ended(log)).toBe(false);
    await a.kill("SIGKILL");

    const b = world.spawn("loop-sub-b");
    const parent = await cmd.waitFor(SID, ended, 40_000);
    const ends = parent.filter(
      (e): e is Extract<FleetEvent, { type: "tool_execution_end" }> =>
        e.type === "tool_execution_end" && e.toolName === AGENT_TOOL_NAME,
    );
    // `tool_execution_end`s come in completion order: by call.
    const byCall = new Map(ends.map((e) => [e.toolCallId, e]));
    expect(byCall.size).toBe(3);
    for (const [i, t] of ["x", "y", "z"].entries()) {
      const end = byCall.get(`toolu_${t}_${i}`);
      expect([end?.isError, end?.result.content]).toEqual([false, [{ type: "text", text: `answer of task ${t}` }]]);
      expect((end?.result.details as { childSessionId?: string } | undefined)?.childSessionId).toBe(children[i]);
    }
    // The toolResult messages the model got are in source order.
    const results = parent.flatMap((e) =>
      e.type === "message_end" && e.message.role === "toolResult" ? [JSON.stringify(e.message.content)] : [],
    );
    expect(results).toEqual(
      ["x", "y", "z"].map((t) => JSON.stringify([{ type: "text", text: `answer of task ${t}` }])),
    );
    expect(parent.some((e) => e.type === "run_resumed")).toBe(true);
    // The model's second call saw the three answers; the run ended with its text.
    const last = parent.filter((e) => e.type === "message_end").at(-1);
    expect(last?.type === "message_end" && JSON.stringify(last.message.content)).toContain("all children answered");

    let childSpend = 0;
    for (const [i, child] of children.entries()) {
      const log = await cmd.events(child);
      const created = log.find((e) => e.type === "session_created");
      expect(created?.type === "session_created" && created.parent).toMatchObject({
        sessionId: SID,
        toolCallId: `toolu_${["x", "y", "z"][i]}_${i}`,
        depth: 1,
        closePolicy: "terminate",
      });
      // Ran once: one creation, one acceptance of the parent's prompt, one run.
      expect(count(log, "session_created")).toBe(1);
      const ids = childCommandIds(child);
      expect(log.filter((e) => e.type === "command_accepted" && e.commandId === ids.prompt)).toHaveLength(1);
      expect(count(log, "agent_start")).toBe(1);
      expect(count(log, "agent_end")).toBe(1);
      childSpend += foldSessionEvents(log).spend.session.totalTokens;
    }
    // The parent's spend holds its own calls and its children's.
    const own = 100 + 30 + 50 + 5;
    const state = foldSessionEvents(parent);
    expect(childSpend).toBeGreaterThanOrEqual(3 * (CHILD_USAGE.input_tokens + CHILD_USAGE.output_tokens));
    expect(state.spend.session.totalTokens).toBeGreaterThanOrEqual(own + childSpend);
    // … while its day record (the tenant's count of it) holds its own calls only.
    const day = [...state.spend.days.values()].reduce((n, s) => n + s.totalTokens, 0);
    expect(state.spend.session.totalTokens - day).toBe(childSpend);
    // Progress reached the parent as tool_execution_update events naming the child.
    const updates = parent.filter((e) => e.type === "tool_execution_update");
    expect(updates.length).toBeGreaterThan(0);
    for (const u of updates) {
      expect(children).toContain(
        (u.type === "tool_execution_update" && (u.partialResult as { childSessionId: string }).childSessionId) || "",
      );
    }
    await b.kill("SIGTERM");
  }, 90_000);

  it("children share what the parent's budget has left, each held to its share while it runs", async () => {
    const d = world.spawn("loop-sub-d");
    await waitForLog(d, "loop_started");
    // The parent spends 130 on its first call; each child would stream ~1500 tokens of text.
    const long = "word ".repeat(1_200);
    world.fake.respondWith((r) => {
      if (firstUserText(r).startsWith("task "))
        return fakeReply([fakeText(long, long.match(/.{1,40}/gs) ?? [])], { usage: CHILD_USAGE, eventDelayMs: 2 });
      return respond({ childDelayMs: 0 })(r);
    });
    const cmd = commander(world.nc);
    const SID = "sub-parent-budget";
    const BUDGET = 2_000;
    await cmd.send(SID, { type: "create_session", config: { budget: { session: { totalTokens: BUDGET } } } });
    await cmd.send(SID, { type: "prompt", text: "fan out: m, n" });
    const parent = await cmd.waitFor(SID, ended, 40_000);
    const share = Math.floor((BUDGET - 130) / 2);
    let children = 0;
    for (const [i, t] of ["m", "n"].entries()) {
      const child = childSessionId(SID, `toolu_${t}_${i}`);
      const log = await cmd.waitFor(child, ended, 20_000);
      const created = log.find((e) => e.type === "session_created");
      expect(created?.type === "session_created" && created.config.budget).toEqual({ run: { totalTokens: share } });
      // Cut while streaming by its own guard, at its share (plus at most the delta that crossed it).
      const last = log.filter((e) => e.type === "message_end").at(-1);
      expect(last?.type === "message_end" && last.message.role === "assistant" && last.message.errorReason).toBe(
        "budget_exceeded",
      );
      const spent = foldSessionEvents(log).spend.session.totalTokens;
      expect(spent).toBeGreaterThanOrEqual(share);
      expect(spent).toBeLessThanOrEqual(share + 20);
      children += spent;
      const end = parent.find((e) => e.type === "tool_execution_end" && e.toolCallId === `toolu_${t}_${i}`);
      expect(end?.type === "tool_execution_end" && [end.isError, JSON.stringify(end.result.content)]).toEqual([
        true,
        expect.stringContaining("Budget exceeded: run total tokens"),
      ]);
    }
    // Together the children spent no more than the parent had left; the parent's total holds them.
    expect(children).toBeLessThanOrEqual(BUDGET - 130 + 40);
    expect(foldSessionEvents(parent).spend.session.totalTokens).toBeGreaterThanOrEqual(130 + children);
    await d.kill("SIGTERM");
  }, 60_000);

  it("aborting the parent aborts its children (terminate)", async () => {
    const c = world.spawn("loop-sub-c");
    await waitForLog(c, "loop_started");
    world.fake.respondWith(respond({ childDelayMs: 20, stall: true }));
    const cmd = commander(world.nc);
    const SID = "sub-parent-abort";
    await cmd.send(SID, { type: "prompt", text: "fan out: p, q" });
    const children = ["p", "q"].map((t, i) => childSessionId(SID, `toolu_${t}_${i}`));
    const streaming = (ev: FleetEvent[]) =>
      ev.some((e) => e.type === "message_start" && e.message.role === "assistant");
    for (const child of children) await cmd.waitFor(child, streaming, 20_000);
    await cmd.send(SID, { type: "abort" });
    const parent = await cmd.waitFor(SID, ended, 20_000);
    const ends = parent.filter((e) => e.type === "tool_execution_end");
    expect(ends.every((e) => e.type === "tool_execution_end" && e.isError)).toBe(true);
    for (const child of children) {
      const log = await cmd.waitFor(child, ended, 20_000);
      const ids = childCommandIds(child);
      expect(log.some((e) => e.type === "command_accepted" && e.commandId === ids.abort)).toBe(true);
      const end = log.find((e) => e.type === "agent_end");
      const lastAssistant =
        end?.type === "agent_end" ? end.messages.filter((m) => m.role === "assistant").at(-1) : undefined;
      expect(lastAssistant?.role === "assistant" && lastAssistant.stopReason).toBe("aborted");
    }
    await c.kill("SIGTERM");
  }, 60_000);

  it("aborting the parent as its worker is SIGKILLed once the abort is accepted: the next owner closes the children, the run ends once", async () => {
    const c = world.spawn("loop-sub-kill-c");
    await waitForLog(c, "loop_started");
    world.fake.respondWith(respond({ childDelayMs: 20, stall: true }));
    const cmd = commander(world.nc);
    const SID = "sub-parent-abort-kill";
    await cmd.send(SID, { type: "prompt", text: "fan out: r, s" });
    const children = ["r", "s"].map((t, i) => childSessionId(SID, `toolu_${t}_${i}`));
    const streaming = (ev: FleetEvent[]) =>
      ev.some((e) => e.type === "message_start" && e.message.role === "assistant");
    for (const child of children) await cmd.waitFor(child, streaming, 20_000);
    // The owner dies the moment its abort's acceptance is on the log, before the abort effect
    // stored the children's closes (in the runs checked, every close came from the next owner) and
    // never after the run ended: the next owner carries the accepted abort out.
    const abortId = randomUUID();
    let killedAfter: string[] | undefined;
    const seen: string[] = [];
    const sub = world.nc.subscribe(subjects.event(partitionOf(SID, 16), SID), {
      callback: (err, msg) => {
        const ev = err ? undefined : decodeEvent(msg.data);
        if (!ev?.ok) return;
        seen.push(ev.value.type);
        if (ev.value.type === "command_accepted" && ev.value.commandId === abortId) {
          void c.kill("SIGKILL");
          killedAfter = [...seen];
        }
      },
    });
    await world.nc.flush();
    await cmd.send(SID, { type: "abort" }, abortId);
    await cmd.waitFor(SID, (ev) => ev.some((e) => e.type === "command_accepted" && e.commandId === abortId), 20_000);
    sub.unsubscribe();
    // The kill happened, and before the run ended.
    expect(killedAfter).toBeDefined();
    expect(killedAfter).not.toContain("agent_end");
    const d = world.spawn("loop-sub-kill-d");
    const parent = await cmd.waitFor(SID, ended, 30_000);
    // The next owner took the session over after the acceptance, and ended the run.
    const afterAbort = parent.slice(parent.findIndex((e) => e.type === "command_accepted" && e.commandId === abortId));
    expect(afterAbort.some((e) => e.type === "owner_change")).toBe(true);
    expect(afterAbort.find((e) => e.type === "agent_end")?.meta.producer).toBe("loop-sub-kill-d");
    expect(count(parent, "agent_end")).toBe(1);
    expect(parent.filter((e) => e.type === "command_accepted" && e.commandId === abortId)).toHaveLength(1);
    const ends = parent.filter((e) => e.type === "tool_execution_end");
    expect(ends).toHaveLength(2);
    expect(ends.every((e) => e.type === "tool_execution_end" && e.isError)).toBe(true);
    for (const child of children) {
      const log = await cmd.waitFor(child, ended, 30_000);
      const ids = childCommandIds(child);
      expect(log.filter((e) => e.type === "command_accepted" && e.commandId === ids.abort)).toHaveLength(1);
      expect(count(log, "agent_end")).toBe(1);
      const end = log.find((e) => e.type === "agent_end");
      const lastAssistant =
        end?.type === "agent_end" ? end.messages.filter((m) => m.role === "assistant").at(-1) : undefined;
      expect(lastAssistant?.role === "assistant" && lastAssistant.stopReason).toBe("aborted");
    }
    await d.kill("SIGTERM");
  }, 90_000);
});
