// Appending synthetic sessions' events as the loop does, for the log benches (bench:scale, bench:cluster).
import { type FleetEvent, partitionOf, subjects } from "@fleet/protocol";
import type { StreamPublisher } from "@fleet/runtime";
import { syntheticSession } from "../src/testing/synthetic-session.js";

const encoder = new TextEncoder();

/** `count` events of `sessions` sessions, round-robin (every session's events in its own order). */
export function* roundRobin(sessionIds: string[], perSession: number, textChars: number): Generator<FleetEvent> {
  const gens = sessionIds.map((sid, i) =>
    syntheticSession({ sessionId: sid, seed: i + 1, runs: 1_000_000, streaming: true, textChars }),
  );
  for (let k = 0; k < perSession; k++) {
    for (const g of gens) {
      const next = g.next();
      if (!next.done) yield next.value;
    }
  }
}

/**
 * Appends events pipelined (`window` in flight), each with its session's expected last sequence as
 * the loop does; resolves with every session's last sequence.
 */
export async function append(
  publisher: StreamPublisher,
  events: Iterable<FleetEvent>,
  partitions: number,
  window: number,
): Promise<Map<string, number>> {
  const last = new Map<string, number>();
  const chains = new Map<string, Promise<void>>();
  const inFlight = new Set<Promise<void>>();
  for (const e of events) {
    const sid = e.meta.sessionId;
    const run = (chains.get(sid) ?? Promise.resolve()).then(async () => {
      const ack = await publisher.publish(
        subjects.event(partitionOf(sid, partitions), sid),
        encoder.encode(JSON.stringify(e)),
        {
          expectLastSubjectSequence: last.get(sid) ?? 0,
          timeoutMs: 30_000,
        },
      );
      if (!ack.ok) throw new Error(`append to ${sid}: ${ack.error}`);
      last.set(sid, ack.seq);
    });
    chains.set(sid, run);
    inFlight.add(run);
    void run.finally(() => inFlight.delete(run));
    if (inFlight.size >= window) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  return last;
}
