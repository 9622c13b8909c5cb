// `npm run bench:fold`: what the session's one fold (`evolveSession`) costs per event, by part of the
// state and by event kind, on logs the engine writes, as bench:engine's emit port folds them (deltas
// coalesced as the service's shell does):
//   A:    one one-turn run (bench:engine's workload A), from a new session state each time;
//   B:    one run with three tool calls (bench:engine's workload B), likewise;
//   long: one session of 200 prompts, each 2 LLM turns × 64 text deltas and one tool call (bench:loop's
//         workload), so that a cost growing with the session shows.
// Figures are ns per event, the median of 7 passes of about 300,000 events each. Run with
// `node --max-opt=1` (no TurboFan) for what the same code costs before it is optimised again.
import { performance } from "node:perf_hooks";
import {
  advanceRunCursor,
  applyAgentStatus,
  type EventDraft,
  emptySessionTree,
  evolveSession,
  type FleetEvent,
  foldSessionSpend,
  foldSessionTreeInPlace,
  idleRunCursor,
  initialAgentStatus,
  initialSessionSpend,
  initialSessionState,
  type RunCursor,
} from "@fleet/protocol";
import { stampDraft } from "../src/decide/stamp-draft.js";
import { record } from "./record-session.js";
import { LOOP_CHUNK_CHARS, loopTurn, textTurn, toolTurn } from "./workloads.js";

const PASSES = 7;
const EVENTS_PER_PASS = 300_000;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/**
 * ns per event of `fold` over `events`, from `fresh()` again and again (about EVENTS_PER_PASS events
 * per pass). States are made before the clock starts, a few hundred at a time.
 */
function perEvent<S>(
  events: readonly FleetEvent[],
  fresh: () => S,
  fold: (state: S, event: FleetEvent) => void,
): number {
  const repeats = Math.max(1, Math.round(EVENTS_PER_PASS / events.length));
  const batch = Math.min(repeats, 256);
  const pass = () => {
    let ms = 0;
    for (let done = 0; done < repeats; done += batch) {
      const states = Array.from({ length: batch }, fresh);
      const start = performance.now();
      for (const state of states) for (const event of events) fold(state, event);
      ms += performance.now() - start;
    }
    return (ms * 1e6) / (Math.ceil(repeats / batch) * batch * events.length);
  };
  pass(); // warm-up
  return median(Array.from({ length: PASSES }, pass));
}

/** ns to make one state with `fresh`. */
function perState(fresh: () => unknown): number {
  const kept: unknown[] = new Array(256);
  const n = 200_000;
  const pass = () => {
    const start = performance.now();
    for (let i = 0; i < n; i++) kept[i & 255] = fresh();
    return ((performance.now() - start) * 1e6) / n;
  };
  pass();
  return median(Array.from({ length: PASSES }, pass));
}

interface Part<S> {
  fresh: () => S;
  fold: (state: S, event: FleetEvent) => void;
  /** Event types `evolveSession` never hands this part one by one. */
  skips?: FleetEvent["type"];
}

const part = <S>(p: Part<S>) => p as Part<unknown>;

/** Each part of the state on its own, over the events `evolveSession` hands it. */
const PARTS: Record<string, Part<unknown>> = {
  "tree (foldSessionTreeInPlace)": part({ fresh: emptySessionTree, fold: foldSessionTreeInPlace }),
  "agent status (applyAgentStatus)": part({
    fresh: initialAgentStatus,
    fold: applyAgentStatus,
    skips: "message_update",
  }),
  "run cursor (advanceRunCursor)": part<{ cursor: RunCursor }>({
    fresh: () => ({ cursor: idleRunCursor() }),
    fold: (holder, event) => {
      holder.cursor = advanceRunCursor(holder.cursor, event);
    },
    skips: "message_update",
  }),
  "spend (foldSessionSpend)": part({ fresh: initialSessionSpend, fold: foldSessionSpend }),
};

const ns = (value: number) => value.toFixed(0).padStart(6);

function report(name: string, events: readonly FleetEvent[]) {
  const kinds = new Map<string, number>();
  for (const event of events) kinds.set(event.type, (kinds.get(event.type) ?? 0) + 1);
  const whole = perEvent(events, initialSessionState, evolveSession);
  console.log(`${name}: ${events.length} events`);
  console.log(`  ${"whole fold (evolveSession)".padEnd(38)} ${ns(whole)} ns/event`);
  let parts = 0;
  for (const [label, { fresh, fold, skips }] of Object.entries(PARTS)) {
    const seen = skips ? events.filter((e) => e.type !== skips) : events;
    const cost = (perEvent(seen, fresh, fold) * seen.length) / events.length;
    parts += cost;
    console.log(`  ${label.padEnd(38)} ${ns(cost)} ns/event`);
  }
  console.log(`  ${"the rest (dispatch, records, deltas)".padEnd(38)} ${ns(whole - parts)} ns/event`);
  const drafts = events.map(({ meta, ...body }) => ({ id: meta.id, runId: meta.runId, body: body as EventDraft }));
  const stamps = drafts as unknown as FleetEvent[];
  const state = initialSessionState();
  const stamp = perEvent(
    stamps,
    () => state,
    (s, d) => {
      const draft = d as unknown as (typeof drafts)[number];
      stampDraft(s, draft, { sessionId: "s-1", producer: "bench", now: 1, runId: draft.runId });
    },
  );
  console.log(`  ${"(the shell's stampDraft, not the fold)".padEnd(38)} ${ns(stamp)} ns/event`);
  console.log("  by kind (whole fold, one event timed at a time):");
  for (const [kind, cost] of [...timeByKind(events)].sort((a, b) => b[1] - a[1])) {
    console.log(`    ${kind.padEnd(24)} ×${String(kinds.get(kind)).padEnd(6)} ${ns(cost)} ns/event`);
  }
}

/** Median ns of `evolveSession` per event kind, each event timed on its own, the timer's cost subtracted. */
function timeByKind(events: readonly FleetEvent[]): Map<string, number> {
  const repeats = Math.max(1, Math.round(EVENTS_PER_PASS / events.length));
  const samples = new Map<string, number[]>();
  let timer = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 1000; i++) {
    const t = performance.now();
    timer = Math.min(timer, performance.now() - t);
  }
  for (let r = 0; r <= repeats; r++) {
    const state = initialSessionState();
    for (const event of events) {
      const t = performance.now();
      evolveSession(state, event);
      const cost = (performance.now() - t - timer) * 1e6;
      if (r === 0) continue; // warm-up
      const list = samples.get(event.type);
      if (list) list.push(cost);
      else samples.set(event.type, [cost]);
    }
  }
  return new Map([...samples].map(([kind, list]) => [kind, Math.max(0, median(list))]));
}

const logA = await record(1, () => [textTurn]);
const logB = await record(1, () => [toolTurn, textTurn]);
const long = await record(200, (p) => [loopTurn(2 * p), loopTurn(2 * p + 1)], LOOP_CHUNK_CHARS);
console.log(`new session state (initialSessionState): ${perState(initialSessionState).toFixed(0)} ns`);
report("A. one-turn run", logA);
report("B. three tool calls", logB);
report("long session (200 prompts, 64 deltas per LLM turn)", long);
