// The invariant checkers on hand-built logs: a well-formed log passes, and each violation is caught.
import { buildContext, type FleetEvent, foldSessionTreeEvents, getTree } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { checkCommands } from "./check-commands.js";
import { checkLiveness } from "./check-liveness.js";
import { checkLogShape } from "./check-log-shape.js";
import { checkSse } from "./check-sse.js";
import { checkStore } from "./check-store.js";
import { checkToolEffects } from "./check-tool-effects.js";
import { checkWebhooks, webhookExpected } from "./check-webhooks.js";
import { measureRunnerSettle } from "./measure-runner-settle.js";
import { addPromptRun, SID, sampleLog, withEvents } from "./sample-log.js";
import type { SentPrompt, SseReceived, StoreAnswer, WebhookReceived } from "./types.js";

const sent = (commandId: string, extra: Partial<SentPrompt> = {}): SentPrompt => ({
  sessionId: SID,
  commandId,
  sends: 1,
  stored: true,
  outcome: "accepted",
  done: true,
  probe: false,
  ...extra,
});
const kinds = (vs: { kind: string }[]) => vs.map((v) => v.kind);
const POLICIES = { bash: "never", write: "safe" } as const;
const ranOnce = (events: readonly FleetEvent[]) =>
  new Map(events.flatMap((e) => (e.type === "tool_execution_start" ? [[e.toolCallId, 1] as const] : [])));

function storeAnswerOf(events: readonly FleetEvent[]): StoreAnswer {
  const tree = foldSessionTreeEvents(events);
  const view = getTree(tree);
  return {
    sessionId: SID,
    context: { ...buildContext(tree), seq: 99 },
    tree: { entries: view.entries, leafId: view.leafId, labels: view.labels, seq: 99 },
  };
}

describe("chaos / invariant 1: commands", () => {
  it("passes a log where each prompt has one outcome, one run and one agent_end", () => {
    const { log } = sampleLog(2);
    expect(checkCommands(log, [sent("c1", { sends: 3 }), sent("c2")])).toEqual([]);
  });
  it("catches a command with no outcome and one with two", () => {
    const { log, builder } = sampleLog(1);
    builder.add({ type: "command_accepted", commandId: "c1", commandType: "prompt" });
    expect(kinds(checkCommands(log, [sent("c1"), sent("lost")]))).toEqual([
      "duplicate_outcome",
      "no_outcome",
      "prompt_runs",
    ]);
    // A command whose publishes were never acknowledged needs no outcome.
    expect(
      checkCommands(sampleLog(1).log, [sent("c1"), sent("unstored", { stored: false, outcome: undefined })]),
    ).toEqual([]);
  });
  it("catches an accepted prompt that started no run, and a run with two agent_end", () => {
    const { log, builder } = sampleLog(1);
    builder.add({ type: "command_accepted", commandId: "c2", commandType: "prompt" });
    const end = log.events.find((e) => e.type === "agent_end") as FleetEvent;
    const doubled = withEvents([...log.events, { ...end, meta: { ...end.meta, id: "other" } }]);
    expect(kinds(checkCommands(doubled, [sent("c1"), sent("c2")]))).toEqual(["prompt_runs", "duplicate_agent_end"]);
  });
});

describe("chaos / invariant 2: log shape", () => {
  it("passes a well-formed log", () => {
    expect(checkLogShape(sampleLog(3).log)).toEqual([]);
  });
  it("catches a duplicate event id", () => {
    const { log } = sampleLog(1);
    const first = log.events[1] as FleetEvent;
    expect(kinds(checkLogShape(withEvents([...log.events, first])))).toContain("duplicate_event_id");
  });
  it("catches an entry whose parent is not the leaf", () => {
    const { builder, log } = sampleLog(1);
    builder.add({ type: "custom", customType: "x", data: 1 }, { parentId: "nowhere" });
    expect(kinds(checkLogShape(log))).toEqual(["entry_chain"]);
  });
  it("catches a tool call started twice with one end (a resumed run announcing it again)", () => {
    const { log } = sampleLog(1);
    const start = log.events.find((e) => e.type === "tool_execution_start") as FleetEvent;
    const events = [...log.events];
    events.splice(10, 0, { ...start, meta: { ...start.meta, id: "again" } });
    expect(kinds(checkLogShape(withEvents(events)))).toEqual(["tool_start_end"]);
  });
  it("catches a run that starts while another is open", () => {
    const { builder, log } = sampleLog(1);
    builder.add({ type: "agent_start" });
    builder.add({ type: "agent_start" }, { runId: "second" });
    expect(kinds(checkLogShape(log))).toEqual(["runs_interleave"]);
  });
});

describe("chaos / invariant 3: tool effects", () => {
  it("passes when every call ran once", () => {
    const { log } = sampleLog(2);
    expect(checkToolEffects(log, ranOnce(log.events), POLICIES, 0)).toEqual([]);
  });
  it("catches a retry: never tool that ran twice", () => {
    const { log } = sampleLog(1);
    const runs = new Map([...ranOnce(log.events), ["call-1-b", 2]]);
    expect(kinds(checkToolEffects(log, runs, POLICIES, 0))).toEqual(["ran_twice"]);
  });
  it("catches a safe call that never ran and a successful result without a run", () => {
    const { log } = sampleLog(1);
    expect(kinds(checkToolEffects(log, new Map(), POLICIES, 0))).toEqual(["result_without_run", "safe_never_ran"]);
  });
  it("catches a call ended as aborted when no abort was sent", () => {
    const builder = sampleLog(0).builder;
    addPromptRun(builder, "c1", 1);
    const events = builder.events.map((e) =>
      e.type === "tool_execution_end" && e.toolName === "bash"
        ? { ...e, isError: true, result: { content: [{ type: "text" as const, text: "Operation aborted" }] } }
        : e,
    );
    const log = withEvents(events);
    expect(kinds(checkToolEffects(log, ranOnce(events), POLICIES, 0))).toEqual(["aborted_without_abort"]);
    expect(checkToolEffects(log, ranOnce(events), POLICIES, 1)).toEqual([]);
  });
});

describe("chaos / invariant 4: store agrees with the log", () => {
  it("passes when the store answers the fold of the log", () => {
    const { log } = sampleLog(2);
    expect(checkStore(log, storeAnswerOf(log.events))).toEqual([]);
  });
  it("catches a store that lost the last run (e.g. after a FLUSHALL)", () => {
    const { log } = sampleLog(2);
    const firstRun = log.events.slice(0, log.events.findIndex((e) => e.type === "agent_end") + 1);
    const diffs = checkStore(log, storeAnswerOf(firstRun));
    expect(kinds(diffs)).toEqual(["context_differs", "tree_differs"]);
    expect(diffs[1]?.detail).toMatch(/items, the log has/);
  });
  it("catches a store that does not answer", () => {
    const { log } = sampleLog(1);
    expect(kinds(checkStore(log, { sessionId: SID, error: "timeout" }))).toEqual(["store_unanswered"]);
  });
});

describe("chaos / invariant 5: nothing stuck", () => {
  it("passes when every run ended and the probe completed", () => {
    const { log } = sampleLog(2);
    expect(checkLiveness(log, [sent("c1"), sent("c2", { probe: true })])).toEqual([]);
  });
  it("catches a run left open and a probe that did not complete", () => {
    const { builder, log } = sampleLog(1);
    builder.add({ type: "command_accepted", commandId: "c2", commandType: "prompt" });
    builder.add({ type: "agent_start" });
    expect(kinds(checkLiveness(log, [sent("c2", { probe: true, done: false })]))).toEqual(["run_open", "probe_stuck"]);
  });
});

describe("chaos / runner kill -> in-flight calls settled", () => {
  it("measures the calls in flight at each kill, and counts those that never ended", () => {
    const { log } = sampleLog(2);
    const start = log.events.find((e) => e.type === "tool_execution_start");
    const kill = (start?.meta.ts ?? 0) + 5;
    const settle = measureRunnerSettle([log], [kill]);
    // call-1-b started before the kill and ended 5 ms after it; call-1-w started after the kill.
    expect(settle).toEqual({ settledMs: [5], unsettled: 0 });
    const open = withEvents(
      log.events.filter((e) => !(e.type === "tool_execution_end" && e.toolCallId === "call-1-b")),
    );
    expect(measureRunnerSettle([open], [kill])).toEqual({ settledMs: [], unsettled: 1 });
  });
});

describe("chaos / invariant 6: SSE = log", () => {
  const { log } = sampleLog(2);
  const frames = (): SseReceived[] => log.events.map((e, i) => ({ seq: 10 + i, type: e.type, eventId: e.meta.id }));

  it("passes a client that received the whole log once, in order", () => {
    expect(checkSse(log, frames())).toEqual([]);
  });

  it("catches a duplicate after a resume, a gap, a foreign event and a wrong order", () => {
    const all = frames();
    const dup = [...all.slice(0, 5), all[4] as SseReceived, ...all.slice(5)];
    expect(kinds(checkSse(log, dup))).toEqual(["sse_order", "sse_duplicate"]);
    const gap = [...all.slice(0, 5), ...all.slice(6)];
    expect(kinds(checkSse(log, gap))).toEqual(["sse_missing"]);
    expect(kinds(checkSse(log, [...all, { seq: 99, type: "leaf", eventId: "x" }]))).toEqual(["sse_foreign"]);
    // Swapped event ids under increasing sequences: everything arrived once, in the wrong order.
    const swapped = all.map((f, i) =>
      i === 2 ? { ...f, eventId: all[3]?.eventId ?? "" } : i === 3 ? { ...f, eventId: all[2]?.eventId ?? "" } : f,
    );
    expect(kinds(checkSse(log, swapped))).toEqual(["sse_order"]);
  });
});

describe("chaos / invariant 7: webhooks deliver every matching event, in order per session", () => {
  const TYPES = new Set(["command_accepted", "tool_execution_end", "agent_end"]);
  const { log: plain } = sampleLog(2);
  // Stream sequences 100, 101, …; the webhook starts at 105 (inside the first run).
  const log = { ...plain, seqs: plain.events.map((_, i) => 100 + i) };
  const expected = webhookExpected(log, TYPES, 105);
  const ok = (seq: number, extra: Partial<WebhookReceived> = {}): WebhookReceived => ({
    seq,
    sessionId: SID,
    type: log.events[seq - 100]?.type ?? "",
    key: String(seq),
    signed: true,
    accepted: true,
    ...extra,
  });

  it("expects the matching events from the start sequence", () => {
    expect(expected.map((seq) => log.events[seq - 100]?.type)).toEqual([
      "tool_execution_end",
      "tool_execution_end",
      "agent_end",
      "command_accepted",
      "tool_execution_end",
      "tool_execution_end",
      "agent_end",
    ]);
  });

  it("passes every event delivered once, and with repeats (a failed attempt, then a redelivery)", () => {
    expect(
      checkWebhooks(
        log,
        expected.map((seq) => ok(seq)),
        TYPES,
        105,
      ),
    ).toEqual([]);
    const [first, ...rest] = expected as [number, ...number[]];
    const retried = [ok(first, { accepted: false }), ok(first), ok(first), ...rest.map((seq) => ok(seq))];
    expect(checkWebhooks(log, retried, TYPES, 105)).toEqual([]);
  });

  it("finds a missing event, one only answered with an error, a first delivery out of order and bad headers", () => {
    const missing = checkWebhooks(
      log,
      expected.slice(1).map((seq) => ok(seq)),
      TYPES,
      105,
    );
    expect(kinds(missing)).toEqual(["webhook_missing"]);
    const refused = expected.map((seq, i) => ok(seq, { accepted: i !== 2 }));
    expect(kinds(checkWebhooks(log, refused, TYPES, 105))).toEqual(["webhook_missing"]);
    const swapped = [expected[1], expected[0], ...expected.slice(2)].map((seq) => ok(seq as number));
    expect(kinds(checkWebhooks(log, swapped, TYPES, 105))).toEqual(["webhook_order"]);
    const bad = expected.map((seq, i) =>
      ok(seq, i === 0 ? { key: "1" } : i === 1 ? { signed: false } : i === 2 ? { type: "message_end" } : {}),
    );
    expect(kinds(checkWebhooks(log, bad, TYPES, 105))).toEqual(["webhook_key", "webhook_signature", "webhook_foreign"]);
  });
});
