import type { FleetEvent } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  deepFreeze,
  startOf,
  streamAssistant,
  textOf,
  userMessage,
} from "../../protocol/fixtures/builders.js";
import { emptySessionView, foldSessionView, foldSessionViewEvents, type SessionView } from "./session-view.js";

/** Runs with streaming, a leaf move, a branch summary, a compaction and a redelivered event. */
function richLog(): FleetEvent[] {
  const log = createLogBuilder(31);
  log.add({ type: "session_created", config: CONFIG });
  const exchange = (q: string, a: string) => {
    log.add({ type: "agent_start" });
    const u = log.add({ type: "message_end", message: userMessage(q) }).meta.id;
    const reply = assistantMessage([textOf(a)]);
    log.add({ type: "message_start", message: startOf(reply) });
    streamAssistant(log, reply);
    log.add({ type: "message_end", message: reply });
    log.add({ type: "agent_end", messages: [] });
    return u;
  };
  const first = exchange("q1", "a1");
  exchange("q2", "a2");
  log.add({ type: "leaf", targetId: first });
  log.add({ type: "branch_summary", fromId: first, summary: "left q2" });
  exchange("q3", "a3");
  const kept = exchange("q4", "a4");
  log.add({ type: "compaction", summary: "q1..q3", firstKeptEntryId: kept, tokensBefore: 900 });
  exchange("q5", "a5");
  log.add(log.events[3] as FleetEvent);
  return log.events;
}

const stepwise = (records: { seq: number; event: FleetEvent }[], from: SessionView) =>
  records.reduce((view, r) => foldSessionView(view, r.seq, r.event), from);

describe("session view / batch fold", () => {
  it("gives the step fold's view, from empty and from a view part way, and leaves the view it starts from alone", () => {
    const records = richLog().map((event, i) => ({ seq: i + 1, event }));
    const whole = stepwise(records, emptySessionView());
    expect(JSON.stringify(foldSessionViewEvents(emptySessionView(), records))).toBe(JSON.stringify(whole));
    for (const cut of [1, 9, 20, records.length - 3]) {
      const part = deepFreeze(stepwise(records.slice(0, cut), emptySessionView()));
      const before = JSON.stringify(part);
      const rest = foldSessionViewEvents(part, records.slice(cut));
      expect(JSON.stringify(rest)).toBe(JSON.stringify(whole));
      expect(JSON.stringify(part)).toBe(before);
    }
    expect(whole.agent.messages.length).toBeGreaterThan(0);
    expect(whole.tree.entries.some((e) => e.type === "compaction")).toBe(true);
  });

  it("an empty batch returns the same view contents", () => {
    const view = stepwise(
      richLog().map((event, i) => ({ seq: i + 1, event })),
      emptySessionView(),
    );
    expect(foldSessionViewEvents(view, [])).toEqual(view);
  });
});
