// A child's answer that never reached its parent's call (change 71). The child's owner stores the
// answer on the call's result subject before it appends `agent_end`; a cluster that loses that
// acknowledged record left the call waiting out `FLEET_SUBAGENT_TIMEOUT_MS`. The answer is also in
// the child's log: once that log has stood still for a grace period, its new events are folded
// (`foldChildAnswer`), each read once per call by direct gets.
import type { JetStreamManager } from "@nats-io/jetstream";
import { type ChildAnswerFold, childAnswerFold, foldChildAnswer, type LoggedAnswer } from "./child-answer.js";
import { type ChildLogTopology, lastChildEvent, scanChildLog } from "./child-log.js";

/** How long a child's log must stand still before its answer is read from it. */
export const DEFAULT_ANSWER_GRACE_MS = 15_000;

/** At most this many of a child's events are read by one check (the next check goes on). */
const EVENTS_PER_CHECK = 2_000;

/**
 * A check for one call: resolves with the answer once the child's log holds it and its last event
 * is at least `graceMs` old (by `now`; the answer record, stored before `agent_end`, had that long
 * to arrive), else undefined. Checks must not overlap (the dispatcher asks one at a time).
 */
export function lostAnswerCheck(opts: {
  jsm: JetStreamManager;
  topology: ChildLogTopology;
  childId: string;
  now: () => number;
  graceMs?: number;
}): () => Promise<LoggedAnswer | undefined> {
  const grace = opts.graceMs ?? DEFAULT_ANSWER_GRACE_MS;
  let fold: ChildAnswerFold | undefined;
  let next = 1;
  return async () => {
    if (fold?.answer) return fold.answer;
    const last = await lastChildEvent(opts.jsm, opts.topology, opts.childId);
    if (!last || last.seq < next || opts.now() - last.event.meta.ts < grace) return undefined;
    const folding = fold ?? childAnswerFold(opts.childId);
    fold = folding;
    await scanChildLog(
      opts.jsm,
      opts.topology,
      opts.childId,
      EVENTS_PER_CHECK,
      (event, seq) => {
        next = seq + 1;
        foldChildAnswer(folding, event);
        return folding.answer ? true : undefined;
      },
      { from: next, until: last.seq },
    );
    return folding.answer;
  };
}
