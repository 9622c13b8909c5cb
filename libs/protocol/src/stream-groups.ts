// Stream groups: the event log as K streams, partition p in group g(p) = p mod K (change 56).
import { ms, STREAMS } from "./jetstream-config.js";
import { parseEventSubject, parseLifecycleSubject, subjects } from "./subjects.js";

/** Default K, stored in KV `fleet_config` under `stream_groups` and fixed once written. */
export const DEFAULT_STREAM_GROUPS = 1;

/**
 * The shape of the event log: P partitions in K stream groups, both read from `fleet_config` and
 * fixed for the life of the log. Contract: `1 <= groups <= partitions`, both integers.
 */
export interface LogTopology {
  partitions: number;
  groups: number;
}

/** Why `{partitions, groups}` cannot be a log's topology, or null when it can. */
export function logTopologyProblem(topo: LogTopology): string | null {
  if (!Number.isInteger(topo.partitions) || topo.partitions < 1) return "partitions must be a positive integer";
  if (!Number.isInteger(topo.groups) || topo.groups < 1) return "stream groups must be a positive integer";
  if (topo.groups > topo.partitions) {
    return `stream groups (${topo.groups}) must not exceed partitions (${topo.partitions}): a group holds at least one partition`;
  }
  return null;
}

/** `g(p) = p mod K`: partitions are dealt round-robin, so groups differ in size by at most one. */
export function groupOf(partition: number, groups: number): number {
  return partition % groups;
}

/**
 * The name of group `g`'s stream: `FLEET_EVENTS` when K = 1 (the name of the log before groups),
 * `FLEET_EVENTS_G<g>` otherwise.
 */
export function eventStreamName(group: number, groups: number): string {
  return groups === 1 ? STREAMS.events.name : `${STREAMS.events.name}_G${group}`;
}

/** The stream holding partition `p`'s event subjects. */
export const eventStreamOfPartition = (partition: number, groups: number) =>
  eventStreamName(groupOf(partition, groups), groups);

/** Group 0's stream also holds every lifecycle record (`fleet.evt.lifecycle.<sessionId>`). */
export const lifecycleStreamName = (groups: number) => eventStreamName(0, groups);

/**
 * The stream that stores `subject`: a session's events (`fleet.evt.<p>.<sessionId>`) or a lifecycle
 * record. Throws on any other subject (a caller's bug).
 */
export function eventStreamOfSubject(subject: string, groups: number): string {
  const parsed = parseEventSubject(subject);
  if (parsed) return eventStreamOfPartition(parsed.partition, groups);
  if (parseLifecycleSubject(subject)) return lifecycleStreamName(groups);
  throw new Error(`not an event subject: ${subject}`);
}

/** Every event stream's name, in group order. */
export function eventStreamNames(groups: number): string[] {
  return Array.from({ length: groups }, (_, g) => eventStreamName(g, groups));
}

/** The partitions of group `g`, ascending. */
export function partitionsOfGroup(group: number, topo: LogTopology): number[] {
  const out: number[] = [];
  for (let p = group; p < topo.partitions; p += topo.groups) out.push(p);
  return out;
}

/**
 * The stream config of group `g`: FLEET_EVENTS's settings, with the group's own name and subjects.
 * K = 1 gives FLEET_EVENTS exactly (`fleet.evt.>`); otherwise the group's partitions' subjects, and
 * group 0 also the lifecycle records.
 */
export function eventStreamSpec(group: number, topo: LogTopology) {
  if (topo.groups === 1) return { ...STREAMS.events, subjects: [...STREAMS.events.subjects] };
  const own = partitionsOfGroup(group, topo).map(subjects.eventsOfPartition);
  return {
    ...STREAMS.events,
    name: eventStreamName(group, topo.groups),
    subjects: group === 0 ? [...own, subjects.lifecycleAll] : own,
  };
}

/**
 * The session store's durable consumer of group `g`: `store-g<g>` on the group's stream, with no
 * filter, so the server hands it every stored event in order without matching subjects.
 * `ack_policy: all`: one instance applies the group in stream order and acks only the last message
 * of each applied batch, which acknowledges everything before it.
 */
export const storeGroupConsumer = (group: number) => ({
  durable_name: `store-g${group}`,
  ack_policy: "all",
  deliver_policy: "all",
  ack_wait: ms(30_000),
  // One consumer covers every partition of the group: batches of up to half of this hold many
  // events per session even when the group's sessions interleave.
  max_ack_pending: 100_000,
  max_deliver: -1,
});

/** The store's lease of group `g` in KV `fleet_leases`. */
export const storeGroupLeaseKey = (group: number) => `store.g.${group}`;
