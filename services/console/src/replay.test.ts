import { foldSessionEvents, streamingMessageOf } from "@fleet/protocol";
import { assistantMessage, createLogBuilder, emitMessage, streamAssistant } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { CHECKPOINT_EVERY, type Folded, ReplayLog } from "./replay.js";
import type { LoggedEvent } from "./sse.js";

function sessionLog(): LoggedEvent[] {
  const log = createLogBuilder(7);
  log.add({ type: "agent_start" } as never);
  for (let i = 0; i < 160; i++) {
    emitMessage(log, { role: "user", content: `q${i}`, timestamp: i });
    streamAssistant(log, assistantMessage([{ type: "text", text: `answer number ${i} `.repeat(3) }]));
  }
  return log.events.map((event, i) => ({ seq: i + 1, event }));
}

/** What a view reads of a state: tree, agent status with the partial message applied, position. */
function viewOf(state: Folded) {
  const streaming = streamingMessageOf(state.session);
  return JSON.stringify({
    tree: state.session.tree,
    status: { ...state.session.status, pendingToolCalls: [...state.session.status.pendingToolCalls] },
    streaming,
    index: state.index,
    seq: state.seq,
  });
}

describe("ReplayLog", () => {
  const items = sessionLog();
  const replay = new ReplayLog();
  replay.append(items.slice(0, 500));
  replay.append(items.slice(400)); // overlapping frames are folded once

  it("holds every event once and folds the same state as a plain fold", () => {
    expect(replay.length).toBe(items.length);
    expect(items.length).toBeGreaterThan(3 * CHECKPOINT_EVERY);
    const direct = foldSessionEvents(items.map((i) => i.event));
    expect(JSON.stringify(replay.latest().session.tree)).toBe(JSON.stringify(direct.tree));
  });

  it("the state at any event equals folding the log up to it, from a checkpoint or a previous state", () => {
    const targets = [
      0,
      1,
      CHECKPOINT_EVERY - 1,
      CHECKPOINT_EVERY,
      CHECKPOINT_EVERY + 1,
      613,
      612,
      611,
      900,
      3,
      items.length,
    ];
    let previous: Folded | undefined;
    for (const n of targets) {
      const fresh = new ReplayLog();
      fresh.append(items.slice(0, n));
      const expected = viewOf(fresh.at(n));
      const fromCheckpoint = replay.at(n);
      expect(viewOf(fromCheckpoint)).toBe(expected);
      previous = replay.at(n, previous);
      expect(viewOf(previous)).toBe(expected);
    }
  });

  it("settling the checkpoints in the background changes no state", () => {
    const settledLog = new ReplayLog();
    settledLog.append(items);
    while (settledLog.settleCheckpoints(performance.now() + 1)) {}
    for (const n of [CHECKPOINT_EVERY + 5, 2 * CHECKPOINT_EVERY, items.length - 1]) {
      expect(viewOf(settledLog.at(n))).toBe(viewOf(replay.at(n)));
    }
  });

  it("states handed out are independent of each other and of the live fold", () => {
    const a = replay.at(600);
    const before = viewOf(replay.at(600));
    replay.at(700, a); // folds `a` forward in place
    expect(viewOf(replay.at(600))).toBe(before);
  });
});
