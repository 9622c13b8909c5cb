// Fixtures of the sub-agent specs: a started `agent` call's decision, and a child's log written to a
// real event stream.
import { encodeEvent, type FleetEvent, partitionOf, STREAMS, subjects } from "@fleet/protocol";
import type { StreamPublisher } from "@fleet/runtime";
import { type ChildCallDecision, decideChildCall, type SubAgentLimits } from "../decide/decide-child.js";

/** The decision of call `tc-1` of run `run-1` of a root session `parent` that starts a child. */
export function startedChildCall(parent: string, limits: SubAgentLimits): ChildCallDecision & { kind: "start" } {
  const decision = decideChildCall({
    parentSessionId: parent,
    parentLink: null,
    runId: "run-1",
    toolCallId: "tc-1",
    args: { prompt: "go" },
    ordinal: 0,
    limits,
  });
  if (decision.kind !== "start") throw new Error(`expected a start, got ${decision.kind}`);
  return decision;
}

/** Stores `events` on the child's subject of FLEET_EVENTS (K = 1), each under its event id. */
export async function writeChildEvents(
  publisher: StreamPublisher,
  partitions: number,
  childId: string,
  events: readonly FleetEvent[],
): Promise<void> {
  const subject = subjects.event(partitionOf(childId, partitions), childId);
  for (const event of events) {
    const encoded = encodeEvent(event);
    if (!encoded.ok) throw new Error(encoded.error);
    const ack = await publisher.publishDurably(subject, encoded.bytes, {
      msgID: event.meta.id,
      stream: STREAMS.events.name,
    });
    if (!ack.ok) throw new Error(ack.error);
  }
}
