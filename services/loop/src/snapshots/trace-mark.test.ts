import { EMPTY_TRACE_CURSOR, type FleetEvent, foldTraceCursor, type TraceSpan } from "@fleet/protocol";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  emitMessage,
  streamAssistant,
  textOf,
  toolCall,
  toolResultMessage,
  userMessage,
} from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { type LifecycleMarks, markLifecycle } from "../lifecycle/lifecycle-marks.js";
import { createRunTraceSink } from "../run-trace-sink.js";
import { traceFrom } from "./trace-mark.js";

const traceparent = (n: number) => `00-${String(n).padStart(32, "a")}-${String(n).padStart(16, "b")}-01`;

/** Runs started by accepted prompts (with a caller's trace), a steer mid-run, owner changes, and a last prompt not started yet. */
function sessionLog(): FleetEvent[] {
  const log = createLogBuilder(31);
  log.add({ type: "session_created", config: CONFIG });
  for (let r = 0; r < 4; r++) {
    log.add({
      type: "command_accepted",
      commandId: `p-${r}`,
      commandType: "prompt",
      trace: { traceparent: traceparent(r + 1) },
    });
    if (r === 2) log.add({ type: "owner_change", workerId: "w-2", partition: 3, epoch: 2 });
    log.add({ type: "agent_start" });
    log.add({ type: "turn_start" });
    emitMessage(log, userMessage(`question ${r}`));
    const call = assistantMessage([toolCall(`t-${r}`, "ls", {})]);
    streamAssistant(log, call);
    if (r === 1) log.add({ type: "command_accepted", commandId: "steer-1", commandType: "steer" });
    const result = toolResultMessage(`t-${r}`, "ls", "a.txt");
    log.add({ type: "tool_execution_start", toolCallId: `t-${r}`, toolName: "ls", args: {} });
    log.add({
      type: "tool_execution_end",
      toolCallId: `t-${r}`,
      toolName: "ls",
      result: { content: result.content },
      isError: false,
    });
    emitMessage(log, result);
    log.add({ type: "turn_end", message: call, toolResults: [result] });
    log.add({ type: "turn_start" });
    const done = assistantMessage([textOf(`answer ${r}`)]);
    streamAssistant(log, done);
    log.add({ type: "turn_end", message: done, toolResults: [] });
    log.add({ type: "agent_end", messages: [done] });
  }
  log.add({
    type: "command_accepted",
    commandId: "p-last",
    commandType: "prompt",
    trace: { traceparent: traceparent(9) },
  });
  log.add({ type: "owner_change", workerId: "w-3", partition: 3, epoch: 3 });
  return log.events;
}

function markAll(marks: LifecycleMarks, events: readonly FleetEvent[], seqOf: (i: number) => number): void {
  for (const [i, e] of events.entries()) markLifecycle(marks, e, seqOf(i));
}

/** The spans a worker sends after loading `loaded`, as the rest of the log is appended. */
function spansAfter(loaded: readonly FleetEvent[], rest: readonly FleetEvent[]): TraceSpan[] {
  const sent: TraceSpan[] = [];
  const sink = createRunTraceSink((spans) => sent.push(...spans));
  sink.loaded("s-1", loaded);
  for (const event of rest) sink.appended(event);
  return sent;
}

describe("trace mark", () => {
  it("at every cut, the events from traceFrom on give the trace sink and cursor what the whole log gives", () => {
    const events = sessionLog();
    // Sequences as a stream gives them: 1-based, with gaps (other sessions' messages).
    const seqOf = (i: number) => 3 * i + 1;
    const indexOf = (seq: number) => (seq - 1) / 3;
    let readFrom = 0;
    for (let cut = 0; cut <= events.length; cut++) {
      // The snapshot made at `cut`, then the load reads 2 events after it; the rest is appended live.
      const marks: LifecycleMarks = {};
      markAll(marks, events.slice(0, cut), seqOf);
      const from = traceFrom(marks.trace);
      const before = from === undefined ? [] : events.slice(indexOf(from), cut);
      const end = Math.min(events.length, cut + 2);
      markAll(marks, events.slice(cut, end), (i) => seqOf(cut + i));
      const loaded = [...before, ...events.slice(cut, end)];
      const rest = events.slice(end);

      expect(spansAfter(loaded, rest), `cut ${cut}`).toStrictEqual(spansAfter(events.slice(0, end), rest));
      const whole = events.slice(0, end).reduce(foldTraceCursor, EMPTY_TRACE_CURSOR);
      expect(marks.trace?.cursor ?? EMPTY_TRACE_CURSOR, `cut ${cut}`).toEqual(whole);
      expect(JSON.parse(JSON.stringify(marks)), `cut ${cut}`).toStrictEqual(marks);
      readFrom = Math.max(readFrom, before.length);
    }
    // Never more than one run and the acceptance before it.
    const longestRun = 4 + events.findIndex((e) => e.type === "agent_end");
    expect(readFrom).toBeLessThanOrEqual(longestRun);
    expect(readFrom).toBeGreaterThan(0);
  });

  it("reads nothing before the snapshot once the last run ended after its acceptance", () => {
    const events = sessionLog();
    const end = events.findLastIndex((e) => e.type === "agent_end") + 1;
    const marks: LifecycleMarks = {};
    markAll(marks, events.slice(0, end), (i) => i + 1);
    expect(traceFrom(marks.trace)).toBeUndefined();
    markLifecycle(marks, events[end] as FleetEvent, end + 1);
    expect(traceFrom(marks.trace)).toBe(end + 1);
  });
});
