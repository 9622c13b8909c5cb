import { createScriptedProvider, type ScriptRequest } from "@fleet/loop";
import {
  buildContext,
  emptySessionTree,
  type FleetEvent,
  foldSessionEvents,
  foldSessionTreeEvents,
  getBranch,
} from "@fleet/protocol";
import { defineTool } from "@fleet/tools";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type commander, startLoopStack } from "../support/loop-harness.js";

let stack: Awaited<ReturnType<typeof startLoopStack>>;
let cmd: ReturnType<typeof commander>;
let executions = 0;

const danger = defineTool({
  name: "danger",
  description: "needs a person's approval",
  parameters: z.object({ what: z.string() }),
  async execute(args) {
    executions++;
    return { content: [{ type: "text", text: `did ${args.what}` }] };
  },
});

/** Summaries for summarisation requests, long answers for everything else. */
function responder(answer: (req: ScriptRequest) => string) {
  return (req: ScriptRequest) =>
    req.context.systemPrompt.includes("summarization assistant")
      ? { text: `SUMMARY of ${req.context.messages.length} message(s)` }
      : { text: answer(req) };
}
const provider = (fn: (req: ScriptRequest) => string | object) =>
  stack.scripted.use(
    createScriptedProvider({
      steps: Array.from({ length: 50 }, () => (req: ScriptRequest) => {
        const r = fn(req);
        return typeof r === "string" ? { text: r } : r;
      }),
      now: () => 5_000,
    }).streamFn,
  );

beforeAll(async () => {
  stack = await startLoopStack({ tools: [danger], worker: { approvalTools: ["danger"] } });
  cmd = stack.cmd;
});
afterAll(async () => {
  await stack?.stop();
});

const agentEnds = (n: number) => (ev: FleetEvent[]) => ev.filter((e) => e.type === "agent_end").length >= n;
const accepted = (id: string) => (ev: FleetEvent[]) =>
  ev.some((e) => (e.type === "command_accepted" || e.type === "command_rejected") && e.commandId === id);
const tree = (events: FleetEvent[]) => foldSessionTreeEvents(events, emptySessionTree());
const userTexts = (messages: { role: string; content?: unknown }[]) =>
  messages.filter((m) => m.role === "user").map((m) => ((m.content as { text: string }[])[0] ?? { text: "" }).text);

describe("loop service / tree commands", () => {
  it("label, set_name and navigate (with and without a branch summary) shape the tree as pi does", async () => {
    provider(responder((req) => `answer ${req.context.messages.length}`));
    const sid = "tree-1";
    await cmd.send(sid, { type: "prompt", text: "first" });
    await cmd.waitFor(sid, agentEnds(1));
    await cmd.send(sid, { type: "prompt", text: "second" });
    let events = await cmd.waitFor(sid, agentEnds(2));
    const firstAssistant = tree(events).entries.find((e) => e.type === "message" && e.message.role === "assistant");
    const secondUser = tree(events).entries.filter((e) => e.type === "message" && e.message.role === "user")[1];
    expect(firstAssistant && secondUser).toBeTruthy();

    const l = await cmd.send(sid, { type: "label", targetId: firstAssistant!.id, label: "checkpoint" });
    const n = await cmd.send(sid, { type: "set_name", name: "tree test" });
    // Navigating to a user message re-opens it: the leaf becomes its parent (the first answer).
    const nav = await cmd.send(sid, { type: "navigate", targetId: secondUser!.id });
    events = await cmd.waitFor(sid, accepted(nav));
    let t = tree(events);
    expect(t.labels[firstAssistant!.id]).toBe("checkpoint");
    expect(t.name).toBe("tree test");
    expect(t.leafId).toBe(firstAssistant!.id);
    expect(
      events.filter((e) => [l, n, nav].includes((e as { commandId?: string }).commandId ?? "")).map((e) => e.type),
    ).toEqual(["command_accepted", "command_accepted", "command_accepted"]);

    // A new prompt now branches from the first answer.
    await cmd.send(sid, { type: "prompt", text: "second, take two" });
    events = await cmd.waitFor(sid, agentEnds(3));
    t = tree(events);
    const ctx = buildContext(t);
    expect(ctx.ok && userTexts(ctx.messages)).toEqual(["first", "second, take two"]);

    // Navigate back to the old branch's tip with a summary of the branch being left.
    const oldTip = events.filter((e) => e.type === "message_end")[3];
    await cmd.send(sid, { type: "navigate", targetId: oldTip!.meta.id, summarize: true, label: "back" });
    events = await cmd.waitFor(sid, (ev) => ev.some((e) => e.type === "label" && e.label === "back"));
    t = tree(events);
    const summary = t.entries.at(-2);
    expect(summary?.type).toBe("branch_summary");
    expect(summary?.type === "branch_summary" && summary.parentId).toBe(oldTip!.meta.id);
    expect(summary?.type === "branch_summary" && summary.summary).toMatch(/SUMMARY of 1 message/);
    expect(t.labels[summary!.id]).toBe("back");
    // The summary's LLM call is in the session's spend (Fleet addition: the event's usage).
    const summarized = events.find((e) => e.type === "branch_summary");
    const summaryOutput = summarized?.type === "branch_summary" ? (summarized.usage?.output ?? 0) : 0;
    expect(summaryOutput).toBeGreaterThan(0);
    const answers = events.flatMap((e) =>
      e.type === "message_end" && e.message.role === "assistant" ? [e.message] : [],
    );
    expect(foldSessionEvents(events).spend.session.outputTokens).toBe(
      answers.reduce((n, m) => n + m.usage.output, summaryOutput),
    );
    const ctx2 = buildContext(t);
    expect(ctx2.ok && ctx2.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
      "branchSummary",
    ]);
  });

  it("compact summarises everything before the kept tail; the next request sees summary + kept messages", async () => {
    const sid = "compact-1";
    const big = "lorem ipsum ".repeat(3_000); // ~9k tokens per answer
    provider(responder(() => big));
    for (let i = 1; i <= 4; i++) {
      await cmd.send(sid, { type: "prompt", text: `question ${i}` });
      await cmd.waitFor(sid, agentEnds(i));
    }
    await cmd.send(sid, { type: "compact", instructions: "keep the questions" });
    let events = await cmd.waitFor(sid, (ev) => ev.some((e) => e.type === "compaction"));
    const compaction = events.find((e) => e.type === "compaction");
    expect(compaction?.type === "compaction" && compaction.summary).toMatch(/^SUMMARY of 1 message/);
    expect(compaction?.type === "compaction" && compaction.tokensBefore).toBeGreaterThan(30_000);
    expect(compaction?.type === "compaction" && compaction.usage?.output).toBeGreaterThan(0);
    const again = await cmd.send(sid, { type: "compact" });
    events = await cmd.waitFor(sid, accepted(again));
    expect(events.find((e) => e.type === "command_rejected" && e.commandId === again)).toMatchObject({
      code: "conflict",
      reason: "Already compacted",
    });

    let seen: ScriptRequest | undefined;
    provider(
      responder((req) => {
        seen = req;
        return "after compaction";
      }),
    );
    await cmd.send(sid, { type: "prompt", text: "question 5" });
    events = await cmd.waitFor(sid, agentEnds(5));
    const t = tree(events);
    const ctx = buildContext(t);
    expect(ctx.ok && ctx.messages[0]?.role).toBe("compactionSummary");
    expect(JSON.stringify(seen?.context.messages[0])).toContain("SUMMARY of 1 message");
    expect(seen?.context.messages.at(-1)?.role).toBe("user");
  });

  it("create_session with forkFrom copies the path up to the entry into a new session", async () => {
    provider(responder((req) => `answer ${req.context.messages.length}`));
    await cmd.send("fork-src", { type: "prompt", text: "one" });
    await cmd.waitFor("fork-src", agentEnds(1));
    await cmd.send("fork-src", { type: "prompt", text: "two" });
    const src = await cmd.waitFor("fork-src", agentEnds(2));
    const firstAnswer = src.filter((e) => e.type === "message_end")[1]!;
    await cmd.send("fork-dst", {
      type: "create_session",
      forkFrom: { sessionId: "fork-src", entryId: firstAnswer.meta.id },
    });
    const dst = await cmd.waitFor("fork-dst", (ev) => ev.filter((e) => e.type === "message_end").length >= 2);
    const created = dst.find((e) => e.type === "session_created");
    expect(created?.type === "session_created" && created.forkedFrom).toEqual({
      sessionId: "fork-src",
      entryId: firstAnswer.meta.id,
    });
    const t = tree(dst);
    const ctx = buildContext(t);
    expect(ctx.ok && userTexts(ctx.messages)).toEqual(["one"]);
    expect(t.entries.every((e) => !src.some((s) => s.meta.id === e.id))).toBe(true);
    await cmd.send("fork-dst", { type: "prompt", text: "branch" });
    const after = await cmd.waitFor("fork-dst", agentEnds(1));
    const ctx2 = buildContext(tree(after));
    expect(ctx2.ok && userTexts(ctx2.messages)).toEqual(["one", "branch"]);
  });

  it("import_session recreates a tree with fresh ids, same shape and the given leaf", async () => {
    const e = (id: string, parentId: string | null, text: string, role: "user" | "assistant") => ({
      type: "message" as const,
      id,
      parentId,
      timestamp: 1_700_000_000_000,
      message:
        role === "user"
          ? { role, content: [{ type: "text" as const, text }], timestamp: 1 }
          : {
              role,
              content: [{ type: "text" as const, text }],
              api: "x",
              provider: "anthropic",
              model: "m",
              usage: {
                input: 0,
                output: 0,
                cacheRead: 0,
                cacheWrite: 0,
                totalTokens: 0,
                cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
              },
              stopReason: "stop" as const,
              timestamp: 2,
            },
    });
    const entries = [
      e("a1b2c3d4", null, "root q", "user"),
      e("a1b2c3d5", "a1b2c3d4", "root a", "assistant"),
      e("a1b2c3d6", "a1b2c3d5", "left q", "user"),
      e("a1b2c3d7", "a1b2c3d5", "right q", "user"),
      {
        type: "label" as const,
        id: "a1b2c3d8",
        parentId: "a1b2c3d7",
        timestamp: 1_700_000_000_001,
        targetId: "a1b2c3d5",
        label: "fork point",
      },
    ];
    await cmd.send("imported-1", { type: "import_session", entries, leafId: "a1b2c3d6" });
    const events = await cmd.waitFor("imported-1", (ev) => ev.some((x) => x.type === "leaf"));
    const t = tree(events);
    expect(t.entries).toHaveLength(5);
    expect(t.entries.map((x) => x.timestamp)).toEqual(entries.map((x) => x.timestamp));
    const root = t.entries[1]!;
    expect(t.labels[root.id]).toBe("fork point");
    const branch = getBranch(t);
    expect(
      branch.ok && branch.entries.map((x) => (x.type === "message" ? (userTexts([x.message])[0] ?? "A") : x.type)),
    ).toEqual(["root q", "A", "left q"]);
    const dup = await cmd.send("imported-1", { type: "import_session", entries });
    const after = await cmd.waitFor("imported-1", accepted(dup));
    expect(after.find((x) => x.type === "command_rejected" && x.commandId === dup)).toMatchObject({ code: "conflict" });
  });

  it("an approval-gated tool call waits for approve_tool_call, and deny blocks it with the reason", async () => {
    stack.scripted.use(
      createScriptedProvider({
        steps: [
          { content: [{ type: "toolCall", id: "ap1", name: "danger", arguments: { what: "deploy" } }] },
          { content: [{ type: "toolCall", id: "ap2", name: "danger", arguments: { what: "drop db" } }] },
          { text: "finished" },
        ],
        now: () => 1,
      }).streamFn,
    );
    await cmd.send("approve-1", { type: "prompt", text: "go" });
    await cmd.waitFor("approve-1", (ev) => ev.some((e) => e.type === "tool_approval_requested"));
    expect(executions).toBe(0);
    await cmd.send("approve-1", { type: "approve_tool_call", toolCallId: "ap1" });
    await cmd.waitFor("approve-1", (ev) => ev.filter((e) => e.type === "tool_approval_requested").length >= 2);
    expect(executions).toBe(1);
    await cmd.send("approve-1", { type: "deny_tool_call", toolCallId: "ap2", reason: "not on prod" });
    const events = await cmd.waitFor("approve-1", agentEnds(1));
    expect(executions).toBe(1);
    const ends = events.filter((e) => e.type === "tool_execution_end");
    expect(
      ends.map((e) => (e.type === "tool_execution_end" ? (e.result.content[0] as { text: string }).text : "")),
    ).toEqual(["did deploy", "not on prod"]);
    expect(
      events
        .filter((e) => e.type === "tool_approval_resolved")
        .map((e) => (e.type === "tool_approval_resolved" ? e.approved : null)),
    ).toEqual([true, false]);
  });
});
