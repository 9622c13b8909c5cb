// Specs of the turn-boundary step: given what is known after a turn, the next fact to learn or
// where the run goes, in pi's order (the engine asks its hooks and polls as these steps say).
import { userMessage } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import {
  type BoundaryStep,
  retryBoundary,
  stepTurnBoundary,
  type TurnBoundary,
  turnBoundary,
} from "./turn-boundary.js";

const steer = userMessage("steer");
const later = userMessage("later");

/** The steps taken, each fact answered from `facts` when asked; the run is aborted from step `abortAt` on. */
function walk(
  b: TurnBoundary,
  facts: { stop?: boolean; steering?: (typeof steer)[]; followUps?: (typeof steer)[] },
  abortAt = Number.POSITIVE_INFINITY,
): BoundaryStep[] {
  const steps: BoundaryStep[] = [];
  for (let i = 0; i < 8; i++) {
    b.aborted = i >= abortAt;
    const step = stepTurnBoundary(b);
    steps.push(step);
    if (step.next === "end_run" || step.next === "turn") return steps;
    if (step.next === "ask_turn_hooks") b.stop = facts.stop ?? false;
    else if (step.queue === "steer") b.steering = facts.steering ?? [];
    else b.followUps = facts.followUps ?? [];
  }
  return steps;
}

describe("turn boundary", () => {
  it("after a plain answer: hooks, steering, follow-ups, then the run ends", () => {
    expect(walk(turnBoundary(false, false), {})).toEqual([
      { next: "ask_turn_hooks" },
      { next: "poll", queue: "steer" },
      { next: "poll", queue: "followUp" },
      { next: "end_run" },
    ]);
  });

  it("a terminal message ends the run before anything is asked", () => {
    expect(walk(turnBoundary(true, true), { steering: [steer] })).toEqual([{ next: "end_run" }]);
  });

  it("steering starts the next turn with it; follow-ups are not polled", () => {
    expect(walk(turnBoundary(false, false), { steering: [steer], followUps: [later] })).toEqual([
      { next: "ask_turn_hooks" },
      { next: "poll", queue: "steer" },
      { next: "turn", pending: [steer] },
    ]);
  });

  it("tool results start the next turn with nothing delivered; follow-ups wait for a turn without them", () => {
    expect(walk(turnBoundary(false, true), { followUps: [later] }).at(-1)).toEqual({ next: "turn", pending: [] });
    expect(walk(turnBoundary(false, false), { followUps: [later] }).at(-1)).toEqual({
      next: "turn",
      pending: [later],
    });
  });

  it("shouldStopAfterTurn ends the run before any poll", () => {
    expect(walk(turnBoundary(false, true), { stop: true, steering: [steer] })).toEqual([
      { next: "ask_turn_hooks" },
      { next: "end_run" },
    ]);
  });

  it("an abort ends the run before the hooks, before each poll, but not a turn the steering poll decided", () => {
    expect(walk(turnBoundary(false, true), {}, 0)).toEqual([{ next: "end_run" }]);
    expect(walk(turnBoundary(false, false), {}, 1).at(-1)).toEqual({ next: "end_run" });
    expect(walk(turnBoundary(false, false), {}, 2).at(-1)).toEqual({ next: "end_run" });
    expect(walk(turnBoundary(false, false), { steering: [steer] }, 2).at(-1)).toEqual({
      next: "turn",
      pending: [steer],
    });
  });

  it("a boundary that asks no hooks (a resumed run between turns) starts at the steering poll", () => {
    expect(walk(turnBoundary(false, false, false), { steering: [steer] })).toEqual([
      { next: "poll", queue: "steer" },
      { next: "turn", pending: [steer] },
    ]);
  });

  it("after a cut stream (retry), an abort starts the retried call's turn with the steering polled so far", () => {
    expect(walk(retryBoundary(), {}, 0)).toEqual([{ next: "turn", pending: [] }]);
    expect(walk(retryBoundary(), { steering: [steer] }, 2)).toEqual([
      { next: "ask_turn_hooks" },
      { next: "poll", queue: "steer" },
      { next: "turn", pending: [steer] },
    ]);
    // shouldStopAfterTurn's answer still ends it; without an abort it is an ordinary next turn.
    expect(walk(retryBoundary(), { stop: true }, 1)).toEqual([{ next: "ask_turn_hooks" }, { next: "end_run" }]);
    expect(walk(retryBoundary(), { followUps: [later] }).at(-1)).toEqual({ next: "turn", pending: [] });
  });
});
