// biome-ignore lint/style/noRestrictedImports: the test reads the golden files from disk
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  emitMessage,
  startOf,
  toolCall,
  toolResultMessage,
  userMessage,
} from "../../fixtures/builders.js";
import { decodeEvent } from "../codec.js";
import type { FleetEvent } from "../events.js";
import { emptyUsage } from "../messages.js";
import { deriveRunSpans, type TraceSpan } from "./run-spans.js";
import { chatTraceparent, EMPTY_TRACE_CURSOR, foldTraceCursor, toolTraceparent } from "./trace-cursor.js";
import { derivedSpanId, derivedTraceId } from "./trace-ids.js";

const FIXTURES = new URL("../../fixtures/", import.meta.url);
function load(name: string): FleetEvent[] {
  return readFileSync(new URL(`${name}.jsonl`, FIXTURES), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const decoded = decodeEvent(line);
      if (!decoded.ok) throw new Error(decoded.error);
      return decoded.value;
    });
}

const CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

function tree(spans: TraceSpan[]): string[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const depth = (s: TraceSpan): number =>
    s.parentSpanId && byId.has(s.parentSpanId) ? 1 + depth(byId.get(s.parentSpanId)!) : 0;
  return spans.map(
    (s) => `${"  ".repeat(depth(s))}${s.name} ${s.startMs - spans[0]!.startMs}..${s.endMs - spans[0]!.startMs}`,
  );
}

describe("trace / spans derived from the log", () => {
  it("makes invoke_agent, chat and execute_tool spans with GenAI attributes", () => {
    const spans = deriveRunSpans(load("parallel-tools"));
    expect(tree(spans)).toEqual([
      "invoke_agent fleet 0..270",
      // A chat starts at the step before it (the user's message_end, the next turn_start).
      "  chat claude-sonnet-4-5 30..90",
      "  execute_tool bash 100..150",
      "  execute_tool read 110..140",
      "  chat claude-sonnet-4-5 210..250",
    ]);
    const [root, chat, bash] = spans as [TraceSpan, TraceSpan, TraceSpan];
    expect(root.kind).toBe("internal");
    expect(root.parentSpanId).toBeUndefined();
    expect(root.traceId).toBe(derivedTraceId(root.runId));
    expect(root.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.conversation.id": "s-1",
      "gen_ai.provider.name": "anthropic",
      "gen_ai.request.model": "claude-sonnet-4-5",
      "fleet.llm_calls": 2,
      "fleet.tool_calls": 2,
    });
    expect(chat.kind).toBe("client");
    expect(chat.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "anthropic",
      "gen_ai.request.model": "claude-sonnet-4-5",
      "gen_ai.response.finish_reasons": ["toolUse"],
    });
    expect(typeof chat.attributes["gen_ai.usage.input_tokens"]).toBe("number");
    expect(chat.attributes["fleet.time_to_first_token"]).toBeGreaterThan(0);
    expect(bash.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "bash",
      "gen_ai.tool.call.id": "toolu_t1",
    });
    expect(spans.every((s) => !s.open && s.traceId === root.traceId)).toBe(true);
    expect(spans.slice(1).every((s) => s.parentSpanId === root.spanId)).toBe(true);
  });

  it("gives the same ids every time, and the caller's trace when the command carried one", () => {
    const events = load("parallel-tools");
    expect(deriveRunSpans(events)).toEqual(deriveRunSpans(events));
    const traced = events.map((e) =>
      e.type === "command_accepted" ? { ...e, trace: { traceparent: CALLER, tracestate: "k=v" } } : e,
    );
    const spans = deriveRunSpans(traced);
    expect(spans[0]!.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    expect(spans[0]!.parentSpanId).toBe("00f067aa0ba902b7");
    expect(spans.every((s) => s.traceId === "4bf92f3577b34da6a3ce929d0e0e4736" && s.traceState === "k=v")).toBe(true);
    expect(spans.map((s) => s.spanId)).toEqual(deriveRunSpans(events).map((s) => s.spanId));
  });

  it("puts the context of the exported chat and execute_tool spans on the wire", () => {
    const events = load("parallel-tools");
    const spans = deriveRunSpans(events);
    const firstAssistant = events.findIndex((e) => e.type === "message_start" && e.message.role === "assistant");
    const cursor = events.slice(0, firstAssistant).reduce(foldTraceCursor, EMPTY_TRACE_CURSOR);
    const chat = spans.find((s) => s.name.startsWith("chat"))!;
    expect(chatTraceparent(cursor)).toBe(`00-${chat.traceId}-${chat.spanId}-01`);
    const bash = spans.find((s) => s.name === "execute_tool bash")!;
    expect(toolTraceparent(cursor, bash.runId, "toolu_t1")).toBe(`00-${bash.traceId}-${bash.spanId}-01`);
  });

  it("makes a queue_wait span per steered and follow-up message, from acceptance to delivery", () => {
    const waits = deriveRunSpans(load("steering")).filter((s) => s.name.startsWith("queue_wait"));
    expect(waits.map((s) => [s.name, s.attributes["fleet.command.id"]])).toEqual([
      ["queue_wait steer", "cmd-s1"],
      ["queue_wait steer", "cmd-s2"],
      ["queue_wait followUp", "cmd-f1"],
      ["queue_wait followUp", "cmd-f2"],
    ]);
    expect(waits.every((s) => s.endMs > s.startMs)).toBe(true);
  });

  it("shows a crash and resume: the cut LLM call fails with fleet.worker_lost, a resume_run span spans the gap", () => {
    const events = load("parallel-tools");
    const cut = events.findIndex((e) => e.type === "message_end" && e.message.role === "assistant");
    const runId = events[cut]!.meta.runId!;
    const at = events[cut - 1]!.meta.ts;
    const meta = (n: number, id: string) => ({ ...events[0]!.meta, id, ts: at + n, runId, producer: "loop-b" });
    const start = events.find((e) => e.type === "message_start" && e.message.role === "assistant")!;
    const crashed: FleetEvent[] = [
      ...events.slice(0, cut),
      { type: "owner_change", workerId: "loop-b", partition: 0, epoch: 2, meta: meta(5_000, "oc") },
      { type: "run_resumed", runId, reason: "worker loop-b took over", meta: meta(5_010, "rr") },
      // The new owner calls the LLM again: a new assistant message.
      { ...start, meta: meta(5_015, "ms2") } as FleetEvent,
      ...events.slice(cut).map((e) => ({ ...e, meta: { ...e.meta, ts: e.meta.ts + 5_020 } })),
    ];
    const spans = deriveRunSpans(crashed);
    const names = spans.map((s) => s.name);
    expect(names).toEqual([
      "invoke_agent fleet",
      "chat claude-sonnet-4-5",
      "resume_run",
      "chat claude-sonnet-4-5",
      "execute_tool bash",
      "execute_tool read",
      "chat claude-sonnet-4-5",
    ]);
    const [root, cutChat, resume, resumedChat] = spans as [TraceSpan, TraceSpan, TraceSpan, TraceSpan];
    expect(cutChat.attributes["error.type"]).toBe("fleet.worker_lost");
    expect(cutChat.endMs).toBe(at);
    expect([resume.startMs, resume.endMs]).toEqual([at, at + 5_010]);
    expect(resume.attributes).toMatchObject({
      "fleet.worker.id": "loop-b",
      "fleet.resume.reason": "worker loop-b took over",
    });
    expect(resumedChat.spanId).toBe(derivedSpanId(runId, "chat:rr"));
    expect(root.events.map((e) => e.name)).toEqual(["fleet.run_resumed"]);
    expect(spans.every((s) => s.traceId === root.traceId && !s.open)).toBe(true);
  });

  it("leaves the spans of an unfinished run open, and derives one run on request", () => {
    const events = load("parallel-tools");
    const partial = events.slice(
      0,
      events.findIndex((e) => e.type === "tool_execution_end"),
    );
    const spans = deriveRunSpans(partial);
    expect(spans.filter((s) => s.open).map((s) => s.name)).toEqual([
      "invoke_agent fleet",
      "execute_tool bash",
      "execute_tool read",
    ]);
    expect(deriveRunSpans(events, { runId: "no-such-run" })).toEqual([]);
  });
});

describe("trace / approvals, compactions and errors", () => {
  it("makes approval_wait and compaction spans, and marks a failed call and its run", () => {
    const b = createLogBuilder(61);
    b.add({ type: "session_created", config: CONFIG });
    b.add({ type: "command_accepted", commandId: "p", commandType: "prompt" });
    b.add({ type: "agent_start" });
    b.add({ type: "turn_start" });
    emitMessage(b, userMessage("write it"));
    const call = assistantMessage([toolCall("w1", "write", { path: "a", content: "b" })]);
    b.add({ type: "message_start", message: startOf(call) });
    b.add({ type: "message_end", message: call });
    b.add({ type: "tool_approval_requested", toolCallId: "w1", toolName: "write", args: {} });
    b.add({ type: "tool_approval_resolved", toolCallId: "w1", approved: false, reason: "not now" });
    b.add({ type: "tool_execution_start", toolCallId: "w1", toolName: "write", args: {} });
    const denied = toolResultMessage("w1", "write", "Tool execution was blocked: not now", true);
    b.add({
      type: "tool_execution_end",
      toolCallId: "w1",
      toolName: "write",
      result: { content: denied.content },
      isError: true,
    });
    emitMessage(b, denied);
    b.add({ type: "turn_end", message: call, toolResults: [denied] });
    b.add({ type: "turn_start" });
    b.add({ type: "compaction_start", reason: "threshold" });
    const usage = { ...emptyUsage(), input: 900, output: 60 };
    b.add({ type: "compaction", summary: "s", firstKeptEntryId: b.leaf()!, tokensBefore: 120_000, usage });
    b.add({ type: "compaction_end", reason: "threshold", aborted: false, willRetry: false });
    const failed = assistantMessage([], { stopReason: "error", errorMessage: "overloaded" });
    b.add({ type: "message_start", message: startOf(failed) });
    b.add({ type: "message_end", message: failed });
    b.add({ type: "turn_end", message: failed, toolResults: [] });
    b.add({ type: "agent_end", messages: [failed] });

    const spans = deriveRunSpans(b.events);
    expect(spans.map((s) => s.name)).toEqual([
      "invoke_agent fleet",
      "chat claude-sonnet-4-5",
      "approval_wait write",
      "execute_tool write",
      "compaction threshold",
      "chat claude-sonnet-4-5",
    ]);
    const [root, , approval, tool, compaction, chat] = spans as TraceSpan[];
    expect(approval!.attributes).toMatchObject({
      "fleet.approval.approved": false,
      "fleet.approval.reason": "not now",
    });
    expect(tool!.attributes["error.type"]).toBe("tool_error");
    expect(tool!.status).toEqual({ code: "error", message: "Tool execution was blocked: not now" });
    expect(compaction!.attributes).toMatchObject({
      "fleet.compaction.tokens_before": 120_000,
      "gen_ai.usage.input_tokens": 900,
      "gen_ai.usage.output_tokens": 60,
    });
    // The compaction's summary call carries the compaction span's context; the call after it its own.
    const at = (type: string) => b.events.findIndex((e) => e.type === type);
    const cursorAt = (n: number) => b.events.slice(0, n).reduce(foldTraceCursor, EMPTY_TRACE_CURSOR);
    expect(chatTraceparent(cursorAt(at("compaction")))).toBe(`00-${root!.traceId}-${compaction!.spanId}-01`);
    expect(chatTraceparent(cursorAt(at("compaction_end") + 1))).toBe(`00-${root!.traceId}-${chat!.spanId}-01`);
    // The call after the compaction starts where it ended.
    expect(chat!.startMs).toBe(compaction!.endMs);
    expect(chat!.attributes["error.type"]).toBe("llm_error");
    expect(chat!.status).toEqual({ code: "error", message: "overloaded" });
    expect(root!.status.code).toBe("error");
    expect(spans.every((s) => !s.open)).toBe(true);
  });

  it("makes a standalone compaction its own root, under the trace its command carried", () => {
    const b = createLogBuilder(62);
    b.add({ type: "session_created", config: CONFIG });
    b.add({ type: "command_accepted", commandId: "c", commandType: "compact", trace: { traceparent: CALLER } });
    const start = b.add({ type: "compaction_start", reason: "manual" });
    start.meta.runId = start.meta.id;
    const entry = b.add({ type: "compaction", summary: "s", firstKeptEntryId: start.meta.id, tokensBefore: 5_000 });
    entry.meta.runId = start.meta.id;
    b.add({ type: "compaction_end", reason: "manual", aborted: false, willRetry: false });
    const spans = deriveRunSpans(b.events);
    expect(spans).toHaveLength(1);
    const during = b.events.slice(0, 3).reduce(foldTraceCursor, EMPTY_TRACE_CURSOR);
    expect(chatTraceparent(during)).toBe(`00-4bf92f3577b34da6a3ce929d0e0e4736-${spans[0]!.spanId}-01`);
    expect(spans[0]).toMatchObject({
      name: "compaction manual",
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      parentSpanId: "00f067aa0ba902b7",
      open: false,
      attributes: { "fleet.compaction.tokens_before": 5_000 },
    });
  });
});
