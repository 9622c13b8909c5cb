import { describe, expect, it } from "vitest";
import { STREAMS } from "./jetstream-config.js";
import {
  eventStreamName,
  eventStreamNames,
  eventStreamOfPartition,
  eventStreamOfSubject,
  eventStreamSpec,
  groupOf,
  lifecycleStreamName,
  logTopologyProblem,
  partitionsOfGroup,
  storeGroupConsumer,
  storeGroupLeaseKey,
} from "./stream-groups.js";
import { subjects } from "./subjects.js";

describe("stream groups / K = 1", () => {
  it("keeps the one stream FLEET_EVENTS with every event subject, exactly as before groups", () => {
    expect(eventStreamNames(1)).toEqual(["FLEET_EVENTS"]);
    expect(eventStreamSpec(0, { partitions: 16, groups: 1 })).toEqual({ ...STREAMS.events, subjects: ["fleet.evt.>"] });
    for (const p of [0, 7, 15]) expect(eventStreamOfPartition(p, 1)).toBe("FLEET_EVENTS");
    expect(lifecycleStreamName(1)).toBe("FLEET_EVENTS");
    expect(eventStreamOfSubject(subjects.event(5, "s-1"), 1)).toBe("FLEET_EVENTS");
  });
});

describe("stream groups / K = 3 over P = 8", () => {
  const topo = { partitions: 8, groups: 3 };

  it("deals partitions round-robin: g(p) = p mod K", () => {
    expect(Array.from({ length: 8 }, (_, p) => groupOf(p, 3))).toEqual([0, 1, 2, 0, 1, 2, 0, 1]);
    expect(partitionsOfGroup(0, topo)).toEqual([0, 3, 6]);
    expect(partitionsOfGroup(1, topo)).toEqual([1, 4, 7]);
    expect(partitionsOfGroup(2, topo)).toEqual([2, 5]);
  });

  it("names one stream per group and resolves each subject to its group's stream", () => {
    expect(eventStreamNames(3)).toEqual(["FLEET_EVENTS_G0", "FLEET_EVENTS_G1", "FLEET_EVENTS_G2"]);
    expect(eventStreamName(2, 3)).toBe("FLEET_EVENTS_G2");
    expect(eventStreamOfPartition(4, 3)).toBe("FLEET_EVENTS_G1");
    expect(eventStreamOfSubject(subjects.event(5, "s-1"), 3)).toBe("FLEET_EVENTS_G2");
    expect(eventStreamOfSubject(subjects.lifecycle("s-1"), 3)).toBe("FLEET_EVENTS_G0");
    expect(() => eventStreamOfSubject("fleet.cmd.1.s-1", 3)).toThrow("not an event subject: fleet.cmd.1.s-1");
  });

  it("gives each group's stream its partitions' subjects, and group 0 the lifecycle records", () => {
    const g0 = eventStreamSpec(0, topo);
    const g2 = eventStreamSpec(2, topo);
    expect(g0.name).toBe("FLEET_EVENTS_G0");
    expect(g0.subjects).toEqual(["fleet.evt.0.*", "fleet.evt.3.*", "fleet.evt.6.*", "fleet.evt.lifecycle.*"]);
    expect(g2.subjects).toEqual(["fleet.evt.2.*", "fleet.evt.5.*"]);
    // Every other setting is FLEET_EVENTS's.
    expect({ ...g2, name: STREAMS.events.name, subjects: STREAMS.events.subjects }).toEqual(STREAMS.events);
  });
});

describe("stream groups / the store's reader", () => {
  it("is one unfiltered durable per group, on a lease per group", () => {
    expect(storeGroupConsumer(2)).toEqual({
      durable_name: "store-g2",
      ack_policy: "all",
      deliver_policy: "all",
      ack_wait: 30_000_000_000,
      max_ack_pending: 100_000,
      max_deliver: -1,
    });
    expect(storeGroupConsumer(0)).not.toHaveProperty("filter_subject");
    expect(storeGroupLeaseKey(1)).toBe("store.g.1");
  });
});

describe("stream groups / valid topologies", () => {
  it("needs 1 <= K <= P", () => {
    expect(logTopologyProblem({ partitions: 16, groups: 1 })).toBeNull();
    expect(logTopologyProblem({ partitions: 16, groups: 16 })).toBeNull();
    expect(logTopologyProblem({ partitions: 4, groups: 5 })).toBe(
      "stream groups (5) must not exceed partitions (4): a group holds at least one partition",
    );
    expect(logTopologyProblem({ partitions: 4, groups: 0 })).toBe("stream groups must be a positive integer");
    expect(logTopologyProblem({ partitions: 1.5, groups: 1 })).toBe("partitions must be a positive integer");
  });
});
