import { type BaseEvent, verifyEvents } from "@ag-ui/client";
import type { FleetEvent } from "@fleet/protocol";
import {
  assistantMessage,
  createLogBuilder,
  emitMessage,
  streamAssistant,
  textOf,
  toolCall,
  toolResultMessage,
  userMessage,
} from "@fleet/protocol/testing";
import { from } from "rxjs";
import { describe, expect, it } from "vitest";
import { type AguiCursor, advanceCursor, aguiCursor, frameId, parseFrameId } from "./agui-cursor.js";
import { type AguiFold, foldUsable } from "./agui-fold-cache.js";
import {
  type AguiFrame,
  aguiCommandId,
  initialAguiProjection,
  reasoningId,
  stepAgui,
  toolResultContent,
} from "./agui-projection.js";

/** Every frame of a log, with the stream sequence (1-based index) of the event that yielded it. */
function project(events: readonly FleetEvent[]): Array<{ seq: number; frames: AguiFrame[] }> {
  let p = initialAguiProjection("s-1");
  return events.map((event, i) => {
    const step = stepAgui(p, event);
    p = step.projection;
    return { seq: i + 1, frames: step.frames };
  });
}

/** Every AG-UI event of a log, in order. */
const eventsOf = (events: readonly FleetEvent[]) => project(events).flatMap((s) => s.frames.map((f) => f.event));

/** The AG-UI client's own verification of one run's events (rejects with its error). */
const verified = (events: readonly BaseEvent[]) =>
  new Promise<BaseEvent[]>((resolve, reject) => {
    const out: BaseEvent[] = [];
    verifyEvents()(from(events)).subscribe({ next: (e) => out.push(e), error: reject, complete: () => resolve(out) });
  });

const RUN_1 = "run-a";
const RUN_2 = "run-b";

/** A prompt through AG-UI: thinking, text and an approval-gated tool call; approved; a final answer. */
function approvalLog() {
  const log = createLogBuilder(7);
  const prompt = userMessage("write ok.txt");
  log.add({ type: "command_accepted", commandId: aguiCommandId(RUN_1), commandType: "prompt", messages: [prompt] });
  log.add({ type: "agent_start" });
  log.add({ type: "turn_start" });
  emitMessage(log, prompt);
  const call = toolCall("toolu_1", "write", { path: "ok.txt", content: "ok\n" });
  const first = assistantMessage(
    [{ type: "thinking", thinking: "I should write it", thinkingSignature: "sig-1" }, textOf("Writing."), call],
    { tokens: 100 },
  );
  streamAssistant(log, first);
  log.add({ type: "tool_execution_start", toolCallId: "toolu_1", toolName: "write", args: call.arguments });
  log.add({ type: "tool_approval_requested", toolCallId: "toolu_1", toolName: "write", args: call.arguments });
  log.add({ type: "command_accepted", commandId: aguiCommandId(RUN_2), commandType: "approve_tool_call" });
  log.add({ type: "tool_approval_resolved", toolCallId: "toolu_1", approved: true });
  log.add({
    type: "tool_execution_end",
    toolCallId: "toolu_1",
    toolName: "write",
    result: { content: [textOf("wrote 3 bytes")] },
    isError: false,
  });
  emitMessage(log, toolResultMessage("toolu_1", "write", "wrote 3 bytes"));
  const second = assistantMessage([textOf("Done.")], { tokens: 40 });
  streamAssistant(log, second);
  log.add({ type: "agent_end", messages: [] });
  return { events: log.events, first, second };
}

describe("gateway / AG-UI projection", () => {
  it("maps a run with thinking, text and a tool call to AG-UI events, interrupted by its approval", async () => {
    const { events } = approvalLog();
    const frames = project(events).flatMap((s) => s.frames);
    const run1 = frames.filter((f) => f.run === RUN_1).map((f) => f.event);
    const firstStart = events.find((e) => e.type === "message_start" && e.message.role === "assistant");
    const m = firstStart?.meta.id as string;
    const r = reasoningId(m, 0);
    expect(run1.map((e) => e.type)).toEqual([
      "RUN_STARTED",
      "STATE_SNAPSHOT",
      "REASONING_START",
      "REASONING_MESSAGE_START",
      "REASONING_MESSAGE_CONTENT",
      "REASONING_MESSAGE_CONTENT",
      "REASONING_MESSAGE_END",
      "REASONING_ENCRYPTED_VALUE",
      "REASONING_END",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "TOOL_CALL_START",
      "TOOL_CALL_ARGS",
      "TOOL_CALL_ARGS",
      "TOOL_CALL_END",
      "STATE_DELTA",
      "RUN_FINISHED",
    ]);
    expect(run1[0]).toMatchObject({ threadId: "s-1", runId: RUN_1 });
    expect(run1[7]).toMatchObject({ subtype: "message", entityId: r, encryptedValue: "sig-1" });
    expect(run1[13]).toMatchObject({ toolCallId: "toolu_1", toolCallName: "write", parentMessageId: m });
    const args = run1.filter((e) => e.type === "TOOL_CALL_ARGS").map((e) => (e as { delta: string }).delta);
    expect(JSON.parse(args.join(""))).toEqual({ path: "ok.txt", content: "ok\n" });
    expect(run1.at(-1)).toMatchObject({
      type: "RUN_FINISHED",
      runId: RUN_1,
      outcome: {
        type: "interrupt",
        interrupts: [
          { id: "toolu_1", reason: "tool_approval", toolCallId: "toolu_1", metadata: { toolName: "write" } },
        ],
      },
      usage: [
        { provider: "anthropic", model: "claude-sonnet-4-5", inputTokens: 100, outputTokens: 0, totalTokens: 100 },
      ],
    });
    // The prompt's user message is the client's own: it is not streamed back.
    expect(run1.some((e) => e.type === "TEXT_MESSAGE_START" && (e as { role?: string }).role === "user")).toBe(false);
    await expect(verified(run1)).resolves.toHaveLength(run1.length);
  });

  it("resumes the approved call as a new run that reports its own usage only", async () => {
    const { events } = approvalLog();
    const frames = project(events).flatMap((s) => s.frames);
    const run2 = frames.filter((f) => f.run === RUN_2).map((f) => f.event);
    const resultEnd = events.find((e) => e.type === "message_end" && e.message.role === "toolResult");
    expect(run2.map((e) => e.type)).toEqual([
      "RUN_STARTED",
      "STATE_SNAPSHOT",
      "TOOL_CALL_RESULT",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "STATE_DELTA",
      "RUN_FINISHED",
    ]);
    expect(run2[2]).toMatchObject({
      messageId: resultEnd?.meta.id,
      toolCallId: "toolu_1",
      content: "wrote 3 bytes",
      role: "tool",
    });
    expect(run2[7]).toMatchObject({
      delta: [
        { op: "replace", path: "/spend/session", value: { inputTokens: 140, totalTokens: 140 } },
        { op: "replace", path: "/spend/run", value: { inputTokens: 140 } },
      ],
    });
    expect(run2.at(-1)).toMatchObject({ outcome: { type: "success" }, usage: [{ inputTokens: 40, totalTokens: 40 }] });
    await expect(verified(run2)).resolves.toHaveLength(run2.length);
    // Every frame belongs to one of the two runs; each event's timestamp is its event's.
    expect(new Set(frames.map((f) => f.run))).toEqual(new Set([RUN_1, RUN_2]));
  });

  it("a run started by another client is its own AG-UI run, with its user message and its error", async () => {
    const log = createLogBuilder(8);
    log.add({ type: "command_accepted", commandId: "cmd-1", commandType: "prompt", messages: [userMessage("hi")] });
    log.add({ type: "agent_start" }, { runId: "fleet-run-1" });
    emitMessage(log, userMessage("hi"));
    const failed = assistantMessage([textOf("Hal")], { stopReason: "error", errorMessage: "overloaded" });
    log.add({ type: "message_start", message: { ...failed, content: [] } });
    log.add({ type: "message_update", deltas: [{ type: "text_start", contentIndex: 0 }] });
    log.add({ type: "message_update", deltas: [{ type: "text_delta", contentIndex: 0, delta: "Hal" }] });
    log.add({ type: "message_end", message: failed });
    log.add({ type: "agent_end", messages: [] });
    const events = eventsOf(log.events);
    expect(events.map((e) => e.type)).toEqual([
      "RUN_STARTED",
      "STATE_SNAPSHOT",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      // An unfinished message still spent what it streamed (chars/4 as output).
      "STATE_DELTA",
      "RUN_ERROR",
    ]);
    expect(events[0]).toMatchObject({ runId: "fleet-run-1" });
    expect(events[2]).toMatchObject({ role: "user" });
    expect(events[3]).toMatchObject({ delta: "hi" });
    expect(events.at(-1)).toMatchObject({ message: "overloaded", code: "error" });
    await expect(verified(events)).resolves.toHaveLength(events.length);
  });

  it("a rejected AG-UI command is a run that starts and errors at once, beside the open run", async () => {
    const log = createLogBuilder(9);
    log.add({ type: "agent_start" }, { runId: "fleet-run-2" });
    log.add({
      type: "command_rejected",
      commandId: aguiCommandId("run-x"),
      commandType: "prompt",
      code: "busy",
      reason: "Agent is busy",
    });
    log.add({ type: "agent_end", messages: [] });
    const frames = project(log.events).flatMap((s) => s.frames);
    expect(frames.filter((f) => f.run === "run-x").map((f) => f.event)).toEqual([
      { type: "RUN_STARTED", threadId: "s-1", runId: "run-x", timestamp: log.events[1]?.meta.ts },
      { type: "RUN_ERROR", message: "Agent is busy", code: "busy", timestamp: log.events[1]?.meta.ts },
    ]);
    expect(frames.filter((f) => f.run === "fleet-run-2").map((f) => f.event.type)).toEqual([
      "RUN_STARTED",
      "STATE_SNAPSHOT",
      "RUN_FINISHED",
    ]);
  });

  it("an aborted run finishes cancelled, ending the blocks its message left open", async () => {
    const log = createLogBuilder(11);
    log.add({ type: "command_accepted", commandId: aguiCommandId("run-c"), commandType: "prompt", messages: [] });
    log.add({ type: "agent_start" });
    const cut = assistantMessage(
      [{ type: "thinking", thinking: "hm", thinkingSignature: "sig-c" }, toolCall("toolu_c", "ls", { path: "." })],
      { stopReason: "aborted", errorMessage: "Request was aborted" },
    );
    log.add({ type: "message_start", message: { ...cut, content: [] } });
    log.add({
      type: "message_update",
      deltas: [
        { type: "thinking_start", contentIndex: 0 },
        { type: "thinking_delta", contentIndex: 0, delta: "hm" },
        { type: "toolcall_start", contentIndex: 1, id: "toolu_c", name: "ls" },
      ],
    });
    log.add({ type: "message_end", message: cut });
    log.add({ type: "agent_end", messages: [] });
    const events = eventsOf(log.events);
    expect(events.map((e) => e.type)).toEqual([
      "RUN_STARTED",
      "STATE_SNAPSHOT",
      "REASONING_START",
      "REASONING_MESSAGE_START",
      "REASONING_MESSAGE_CONTENT",
      "TOOL_CALL_START",
      "REASONING_MESSAGE_END",
      "REASONING_ENCRYPTED_VALUE",
      "REASONING_END",
      "TOOL_CALL_ARGS",
      "TOOL_CALL_END",
      "STATE_DELTA",
      "RUN_FINISHED",
    ]);
    expect(events[9]).toMatchObject({ delta: JSON.stringify({ path: "." }) });
    expect(events.at(-1)).toMatchObject({ runId: "run-c", outcome: { type: "cancelled" } });
    await expect(verified(events)).resolves.toHaveLength(events.length);
  });

  it("an AG-UI command accepted while another run is open starts and finishes at once", () => {
    const log = createLogBuilder(12);
    log.add({ type: "agent_start" }, { runId: "fleet-run-4" });
    log.add({ type: "command_accepted", commandId: aguiCommandId("run-d"), commandType: "approve_tool_call" });
    const frames = project(log.events).flatMap((s) => s.frames);
    expect(frames.filter((f) => f.run === "run-d").map((f) => [f.event.type, f.terminal])).toEqual([
      ["RUN_STARTED", false],
      ["RUN_FINISHED", true],
    ]);
  });

  it("a tool result with an image is text and image parts", () => {
    expect(toolResultContent([textOf("a"), textOf("b")])).toBe("a\nb");
    expect(toolResultContent([textOf("see"), { type: "image", data: "aGk=", mimeType: "image/png" }])).toEqual([
      { type: "text", text: "see" },
      { type: "image", source: { type: "data", value: "aGk=", mimeType: "image/png" } },
    ]);
  });

  it("queues go to the state as the text of each message", () => {
    const log = createLogBuilder(10);
    log.add({ type: "agent_start" }, { runId: "fleet-run-3" });
    log.add({ type: "queue_update", steer: [userMessage("look left")], followUp: [], nextTurn: [] });
    log.add({ type: "agent_end", messages: [] });
    const events = eventsOf(log.events);
    expect(events[2]).toMatchObject({
      type: "STATE_DELTA",
      delta: [{ op: "replace", path: "/queues/steer", value: ["look left"] }],
    });
  });
});

describe("gateway / AG-UI stream ids", () => {
  it("names every frame exactly: `<seq>.<k>` inside an event's frames, `<seq>` on its last", () => {
    expect(parseFrameId("12")).toEqual({ seq: 12, k: Number.POSITIVE_INFINITY });
    expect(parseFrameId(" 12.3 ")).toEqual({ seq: 12, k: 3 });
    for (const bad of ["", "x", "12.0", "-1", "1.2.3", "12."]) expect(parseFrameId(bad)).toBe("invalid");
  });

  it("a stream cut after any frame resumes with exactly the frames after it, to the run's end", () => {
    const { events } = approvalLog();
    const steps = project(events);
    const follow = (cursor: ReturnType<typeof aguiCursor>) => {
      const ids: string[] = [];
      let c = cursor;
      for (const { seq, frames } of steps) {
        const next = advanceCursor(c, seq, frames);
        c = next.cursor;
        ids.push(...next.out.map((o) => o.id));
        if (c.done) break;
      }
      return ids;
    };
    // The POST of run 2 follows the run its command opened, from the command's outcome.
    const outcome2 = events.findIndex((e) => e.type === "command_accepted" && e.commandId === aguiCommandId(RUN_2));
    const whole = follow(aguiCursor({ seq: outcome2, k: Number.POSITIVE_INFINITY }, "next"));
    expect(whole.length).toBe(9);
    expect(whole[0]).toBe(`${outcome2 + 1}.1`);
    for (let cut = 0; cut < whole.length - 1; cut++) {
      const at = parseFrameId(whole[cut] as string);
      if (at === "invalid") throw new Error("bad id");
      expect(follow(aguiCursor(at, "resume"))).toEqual(whole.slice(cut + 1));
    }
    // After the run's last frame, the next run to start: none here.
    const last = parseFrameId(whole.at(-1) as string);
    if (last === "invalid") throw new Error("bad id");
    expect(follow(aguiCursor(last, "resume"))).toEqual([]);
    // Resuming after run 1's interrupt follows the next run: run 2.
    const run1 = follow(aguiCursor({ seq: 0, k: Number.POSITIVE_INFINITY }, "next"));
    const end1 = parseFrameId(run1.at(-1) as string);
    if (end1 === "invalid") throw new Error("bad id");
    expect(follow(aguiCursor(end1, "resume"))).toEqual(whole);
  });
  it("a stream that starts from a kept fold sends the same frames as one that folds from the start", () => {
    const { events } = approvalLog();
    const steps = project(events);
    const follow = (cursor: AguiCursor, fromSeq: number) => {
      const ids: string[] = [];
      let c = cursor;
      for (const { seq, frames } of steps) {
        if (seq < fromSeq) continue;
        const next = advanceCursor(c, seq, frames);
        c = next.cursor;
        ids.push(...next.out.map((o) => `${o.id} ${o.frame.event.type}`));
        if (c.done) break;
      }
      return ids;
    };
    /** The fold after the event at `seq`, as a stream that got there keeps it. */
    const foldAt = (seq: number): AguiFold => {
      let fold: AguiFold = { seq: 0, projection: initialAguiProjection("s-1"), last: null };
      for (const [i, event] of events.slice(0, seq).entries()) {
        const step = stepAgui(fold.projection, event);
        const last = step.frames.at(-1);
        fold = {
          seq: i + 1,
          projection: step.projection,
          last: last ? { run: last.run, terminal: last.terminal } : fold.last,
        };
      }
      return fold;
    };
    const ids = steps.flatMap(({ seq, frames }) => frames.map((_, i) => frameId(seq, i + 1, frames.length)));
    let compared = 0;
    for (const id of ids) {
      const after = parseFrameId(id);
      if (after === "invalid") throw new Error("bad id");
      const whole = follow(aguiCursor(after, "resume"), 1);
      for (let seq = 1; seq <= events.length; seq++) {
        const fold = foldAt(seq);
        if (!foldUsable(fold, after)) continue;
        expect(follow({ ...aguiCursor(after, "resume"), last: fold.last }, seq + 1)).toEqual(whole);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(100);
    // Inside an event's frames, that event is folded again: a fold that has it is not used.
    expect(foldUsable(foldAt(5), { seq: 5, k: 1 })).toBe(false);
    expect(foldUsable(foldAt(5), { seq: 5, k: Number.POSITIVE_INFINITY })).toBe(true);
  });
});
