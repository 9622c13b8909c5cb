// Reading a child session's log from its parent's owner, by direct gets on the child's subject (no
// consumer): from its start, or its last event.
import { decodeEvent, eventStreamOfPartition, type FleetEvent, partitionOf, subjects } from "@fleet/protocol";
import { walkBackSubject } from "@fleet/runtime";
import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";

/** Events a scan walks back from the child's last before it reads forward by `next_by_subj` instead. */
const CHILD_WALK_MAX = 4_096;

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
 * that does not decode is passed over. The events are found by walking back from the child's last
 * (`walkBackSubject`: one get by sequence each, up to CHILD_WALK_MAX), else read forward by direct
 * get `next_by_subj`, which nats-server 2.9 serves by scanning the stream from where each get
 * starts (from the stream's start for the child's first event).
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
  const from = range.from ?? 1;
  const last = await jsm.direct.getMessage(stream, { last_by_subj: subject });
  if (!last || last.seq < from) return undefined;
  const walked = await walkBackSubject(jsm, stream, subject, last, from, CHILD_WALK_MAX);
  if (walked) return visitAll(walked, until, maxEvents, visit);
  let seq = from;
  for (let n = 0; n < maxEvents; n++) {
    const msg = await jsm.direct.getMessage(stream, { seq, next_by_subj: subject });
    if (!msg || msg.seq > until) return undefined;
    seq = msg.seq + 1;
    const found = visitOne(msg, visit);
    if (found !== undefined) return found;
  }
  return undefined;
}

function visitAll<T>(
  msgs: readonly StoredMsg[],
  until: number,
  maxEvents: number,
  visit: (event: FleetEvent, seq: number) => T | undefined,
): T | undefined {
  for (let n = 0; n < msgs.length && n < maxEvents; n++) {
    const msg = msgs[n] as StoredMsg;
    if (msg.seq > until) return undefined;
    const found = visitOne(msg, visit);
    if (found !== undefined) return found;
  }
  return undefined;
}

function visitOne<T>(msg: StoredMsg, visit: (event: FleetEvent, seq: number) => T | undefined): T | undefined {
  const decoded = decodeEvent(msg.data);
  return decoded.ok ? visit(decoded.value, msg.seq) : undefined;
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
