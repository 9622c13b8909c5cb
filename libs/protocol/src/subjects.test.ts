import { describe, expect, it } from "vitest";
import {
  parseCommandSubject,
  parseEventSubject,
  parseStoreAppliedSubject,
  parseToolCallSubject,
  parseToolCancelSubject,
  parseToolResultSubject,
  STORE_QUEUE_GROUP,
  subjects,
  toolCallMsgId,
} from "./subjects.js";

describe("subjects / builders", () => {
  it("builds every subject of PROTOCOL.md", () => {
    expect(subjects.event(3, "s-1")).toBe("fleet.evt.3.s-1");
    expect(subjects.eventsOfPartition(0)).toBe("fleet.evt.0.*");
    expect(subjects.eventsAll).toBe("fleet.evt.>");
    expect(subjects.eventsOfSession("s-1")).toBe("fleet.evt.*.s-1");
    expect(subjects.command(15, "Abc_9")).toBe("fleet.cmd.15.Abc_9");
    expect(subjects.commandsOfPartition(2)).toBe("fleet.cmd.2.*");
    expect(subjects.commandsAll).toBe("fleet.cmd.>");
    expect(subjects.toolCall("read")).toBe("fleet.tool.call.read");
    expect(subjects.toolCallsAll).toBe("fleet.tool.call.>");
    expect(subjects.toolResult("s-1", "toolu_01")).toBe("fleet.tool.result.s-1.toolu_01");
    expect(subjects.toolResultsOfSession("s-1")).toBe("fleet.tool.result.s-1.*");
    expect(subjects.toolResultsAll).toBe("fleet.tool.result.>");
    expect(subjects.toolCancel("s-1", "toolu_01")).toBe("fleet.tool.cancel.s-1.toolu_01");
    expect(subjects.toolCancelsAll).toBe("fleet.tool.cancel.*.*");
    expect(subjects.store("get_context")).toBe("fleet.store.get_context");
    expect(subjects.storeApplied(2)).toBe("fleet.store.applied.2");
    expect(subjects.storeAppliedAll).toBe("fleet.store.applied.*");
    expect(parseStoreAppliedSubject(subjects.storeApplied(12))).toBe(12);
    for (const other of [
      "fleet.store.applied",
      "fleet.store.applied.x",
      "fleet.store.applied.01",
      "fleet.store.list_sessions",
    ])
      expect(parseStoreAppliedSubject(other), other).toBeNull();
    expect(subjects.hook("before_tool_call")).toBe("fleet.hook.before_tool_call");
    expect(STORE_QUEUE_GROUP).toBe("fleet-store");
    expect(toolCallMsgId("s-1", "toolu_01")).toBe("s-1.toolu_01");
  });

  it("refuses tokens that would break the subject", () => {
    for (const bad of ["a.b", "a b", "*", ">", "", "x".repeat(129), "é"]) {
      expect(() => subjects.event(0, bad)).toThrow(`invalid subject token: ${JSON.stringify(bad)}`);
      expect(() => subjects.command(0, bad)).toThrow("invalid subject token");
      expect(() => subjects.toolResult(bad, "t")).toThrow("invalid subject token");
      expect(() => subjects.toolCancel("s", bad)).toThrow("invalid subject token");
    }
    expect(() => subjects.toolCall("x".repeat(65))).toThrow("invalid subject token");
    expect(subjects.toolCall("x".repeat(64))).toBe(`fleet.tool.call.${"x".repeat(64)}`);
  });
});

describe("subjects / parsers", () => {
  it("parse what the builders build", () => {
    expect(parseEventSubject(subjects.event(3, "s-1"))).toEqual({ partition: 3, sessionId: "s-1" });
    expect(parseCommandSubject(subjects.command(12, "s-2"))).toEqual({ partition: 12, sessionId: "s-2" });
    expect(parseToolCallSubject(subjects.toolCall("bash"))).toEqual({ toolName: "bash" });
    expect(parseToolResultSubject(subjects.toolResult("s-1", "t-1"))).toEqual({ sessionId: "s-1", toolCallId: "t-1" });
    expect(parseToolCancelSubject(subjects.toolCancel("s-1", "t-1"))).toEqual({ sessionId: "s-1", toolCallId: "t-1" });
  });

  it("return null for foreign or malformed subjects", () => {
    const foreign = [
      "fleet.evt.3",
      "fleet.evt.3.s-1.extra",
      "fleet.evt.03.s-1",
      "fleet.evt.-1.s-1",
      "fleet.evt.x.s-1",
      "fleet.evt.3.*",
      "fleet.cmd.3.s-1",
      "agent.evt.3.s-1",
    ];
    for (const s of foreign) expect(parseEventSubject(s)).toBeNull();
    expect(parseCommandSubject("fleet.evt.3.s-1")).toBeNull();
    expect(parseCommandSubject("fleet.cmd.1.5.s")).toBeNull();
    expect(parseToolCallSubject("fleet.tool.call.a.b")).toBeNull();
    expect(parseToolCallSubject("fleet.tool.result.read")).toBeNull();
    expect(parseToolResultSubject("fleet.tool.result.s-1")).toBeNull();
    expect(parseToolResultSubject("fleet.tool.cancel.s-1.t-1")).toBeNull();
    expect(parseToolCancelSubject("fleet.tool.cancel.s-1.*")).toBeNull();
    expect(parseEventSubject("fleet.evt.0.s-1")).toEqual({ partition: 0, sessionId: "s-1" });
  });
});

describe("subjects / partitions", () => {
  it("refuses a partition that is not a non-negative integer", () => {
    for (const p of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => subjects.event(p, "s-1")).toThrow(`invalid partition: ${p}`);
      expect(() => subjects.command(p, "s-1")).toThrow("invalid partition");
      expect(() => subjects.eventsOfPartition(p)).toThrow("invalid partition");
      expect(() => subjects.commandsOfPartition(p)).toThrow("invalid partition");
    }
  });
});
