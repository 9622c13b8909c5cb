// Reading a child session's log from its parent's owner, by direct gets on the child's subject (no
// consumer): from its start, or its last event.
import { decodeEvent, eventStreamOfPartition, type FleetEvent, partitionOf, subjects } from "@fleet/protocol";
import type { JetStreamManager } from "@nats-io/jetstream";

export interface ChildLogTopology {
  partitions: number;
  groups: number;
}

function childLogOf(topology: ChildLogTopology, childId: string): { stream: string; subject: string } {
  const partition = partitionOf(childId, topology.partitions);
  return { stream: eventStreamOfPartition(partition, topology.groups), subject: subjects.event(partition, childId) };
}

/**
 * The first answer `visit` gives for the child's events from stream sequence `range.from` (default:
 * the log's start) through `range.until` (default: its end), at most `maxEvents` of them. An event
 * that does not decode is passed over.
 */
export async function scanChildLog<T>(
  jsm: JetStreamManager,
  topology: ChildLogTopology,
  childId: string,
  maxEvents: number,
  visit: (event: FleetEvent, seq: number) => T | undefined,
  range: { from?: number; until?: number } = {},
): Promise<T | undefined> {
  const { stream, subject } = childLogOf(topology, childId);
  const until = range.until ?? Number.POSITIVE_INFINITY;
  let seq = range.from ?? 1;
  for (let n = 0; n < maxEvents; n++) {
    const msg = await jsm.direct.getMessage(stream, { seq, next_by_subj: subject });
    if (!msg || msg.seq > until) return undefined;
    seq = msg.seq + 1;
    const decoded = decodeEvent(msg.data);
    if (!decoded.ok) continue;
    const found = visit(decoded.value, msg.seq);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The child's last event and its stream sequence; undefined for an empty log or one that does not decode. */
export async function lastChildEvent(
  jsm: JetStreamManager,
  topology: ChildLogTopology,
  childId: string,
): Promise<{ event: FleetEvent; seq: number } | undefined> {
  const { stream, subject } = childLogOf(topology, childId);
  const msg = await jsm.direct.getMessage(stream, { last_by_subj: subject });
  if (!msg) return undefined;
  const decoded = decodeEvent(msg.data);
  return decoded.ok ? { event: decoded.value, seq: msg.seq } : undefined;
}
