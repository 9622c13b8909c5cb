import type { TraceSpan } from "@fleet/protocol";
import { promptToolRun } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { createRunTraceSink } from "./run-trace-sink.js";

const names = (batches: TraceSpan[][]) => batches.map((batch) => batch.map((s) => s.name));

describe("loop / live span export", () => {
  it("sends each span once, when the event that closes it is appended", () => {
    const sent: TraceSpan[][] = [];
    const sink = createRunTraceSink((spans) => sent.push(spans));
    const events = promptToolRun(71);
    sink.loaded("s-1", []);
    for (const event of events) sink.appended(event);
    expect(names(sent)).toEqual([
      ["chat claude-sonnet-4-5"],
      ["execute_tool ls"],
      ["chat claude-sonnet-4-5"],
      ["invoke_agent fleet"],
    ]);
    expect(sent.flat().every((s) => !s.open)).toBe(true);
  });

  it("a worker that loads a run mid-way sends only what was still open and what follows", () => {
    const events = promptToolRun(71);
    const cut = events.findIndex((e) => e.type === "tool_execution_start") + 1;
    const sent: TraceSpan[][] = [];
    const sink = createRunTraceSink((spans) => sent.push(spans));
    sink.loaded("s-1", events.slice(0, cut));
    for (const event of events.slice(cut)) sink.appended(event);
    // The first chat closed before the load: the previous owner sent it.
    expect(names(sent)).toEqual([["execute_tool ls"], ["chat claude-sonnet-4-5"], ["invoke_agent fleet"]]);
  });

  it("a run that starts after a load takes the trace context of the acceptance in the loaded log", () => {
    const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const events = promptToolRun(72).map((e) =>
      e.type === "command_accepted" ? { ...e, trace: { traceparent: caller } } : e,
    );
    const start = events.findIndex((e) => e.type === "agent_start");
    const sent: TraceSpan[][] = [];
    const sink = createRunTraceSink((spans) => sent.push(spans));
    sink.loaded("s-1", events.slice(0, start));
    for (const event of events.slice(start)) sink.appended(event);
    const spans = sent.flat();
    expect(spans).toHaveLength(4);
    expect(spans.every((s) => s.traceId === "4bf92f3577b34da6a3ce929d0e0e4736")).toBe(true);
    expect(spans.at(-1)).toMatchObject({ name: "invoke_agent fleet", parentSpanId: "00f067aa0ba902b7" });
  });
});
