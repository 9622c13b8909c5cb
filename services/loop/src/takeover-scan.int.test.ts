// The takeover scan against a real nats-server: it recovers the sessions the open-work index lists
// (retrying a failed recovery) and reads nothing of the sessions without an entry; a partition whose
// log predates the index is scanned in full once.
import { encodeEvent, type FleetEvent, partitionOf, STREAMS, subjects } from "@fleet/protocol";
import { CONFIG, createLogBuilder } from "@fleet/protocol/testing";
import { applyTopology, connectNats, createStreamPublisher, type StreamPublisher } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOpenWorkIndex, type OpenWorkIndex } from "./open-work/open-work-index.js";
import { scanPartition } from "./takeover-scan.js";

const PARTITIONS = 4;
let server: NatsServer;
let nc: NatsConnection;
let spy: NatsConnection;
let publisher: StreamPublisher;
let index: OpenWorkIndex;
beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "scan-test" });
  spy = await connectNats({ url: server.url, name: "scan-spy" });
  await applyTopology(nc, { partitions: PARTITIONS });
  publisher = createStreamPublisher(nc);
  index = createOpenWorkIndex({ publisher, jsm: await jetstreamManager(nc), workerId: "scan-test", now: Date.now });
});
afterAll(async () => {
  publisher?.close();
  await spy?.close();
  await nc?.close();
  await server?.stop();
});

async function publish(events: FleetEvent[]) {
  const js = jetstream(nc);
  for (const e of events) {
    const encoded = encodeEvent(e);
    if (!encoded.ok) throw new Error(encoded.error);
    await js.publish(subjects.event(partitionOf(e.meta.sessionId, PARTITIONS), e.meta.sessionId), encoded.bytes);
  }
}

/** A session id of `partition` starting with `prefix`. */
function idIn(partition: number, prefix: string): string {
  for (let i = 0; ; i++) if (partitionOf(`${prefix}-${i}`, PARTITIONS) === partition) return `${prefix}-${i}`;
}

/** A session whose last event ends its run (no open work), of `partition`. */
async function ended(partition: number, prefix: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; ids.length < count; n++) {
    const id = `${prefix}-${n}`;
    if (partitionOf(id, PARTITIONS) !== partition) continue;
    ids.push(id);
    const b = createLogBuilder(100 + n, id);
    b.add({ type: "session_created", config: CONFIG });
    b.add({ type: "command_rejected", commandId: `r-${n}`, commandType: "prompt", code: "busy", reason: "busy" });
    await publish(b.events);
  }
  return ids;
}

/** A session whose log ends at an acceptance (open work). */
async function open(id: string) {
  const b = createLogBuilder(7, id);
  b.add({ type: "session_created", config: CONFIG });
  b.add({ type: "command_accepted", commandId: `c-${id}`, commandType: "prompt" });
  await publish(b.events);
}

/** Every JetStream API request made while `work` runs, as `subject payload`. */
async function apiRequests(work: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const sub = spy.subscribe("$JS.API.>", { callback: (_e, m) => void seen.push(`${m.subject} ${m.string()}`) });
  await spy.flush();
  await work();
  await nc.flush();
  await spy.flush();
  sub.unsubscribe();
  return seen;
}

/** One scan of `partition` with the test's index, retrying after 20 ms. */
async function scan(
  partition: number,
  recover: (sessionId: string) => Promise<void>,
  more: { active?: () => boolean; onError?: (err: unknown, what: string) => void } = {},
) {
  return scanPartition({
    jsm: await jetstreamManager(nc),
    index,
    partition,
    active: more.active ?? (() => true),
    recover,
    onError: more.onError ?? (() => undefined),
    retryMs: 20,
  });
}

describe("takeover scan", () => {
  it("recovers only the sessions the index lists, retrying a failed recovery; sessions without an entry are not read", async () => {
    const partition = 1;
    await index.noteScanned(partition);
    const history = await ended(partition, "scan-ended", 30);
    const live = idIn(partition, "scan-live");
    await open(live);
    await index.mark(partition, live, () => false);
    // An open session of another partition is not this scan's.
    await index.mark(2, idIn(2, "scan-other"), () => false);

    const calls: string[] = [];
    const errors: string[] = [];
    let outcome: Awaited<ReturnType<typeof scanPartition>> | undefined;
    const requests = await apiRequests(async () => {
      outcome = await scan(
        partition,
        async (sessionId) => {
          calls.push(sessionId);
          if (calls.length < 3) throw new Error("timeout");
        },
        { onError: (_err, what) => errors.push(what) },
      );
    });
    expect(calls).toEqual([live, live, live]);
    expect(errors).toEqual([live, live]);
    expect(outcome).toEqual({ listed: 1, fullScan: false, recovered: 1 });
    // The index was read (the spy sees requests) and nothing of FLEET_EVENTS was asked: no subject
    // listing, no session's last event.
    expect(requests.some((r) => r.startsWith(`$JS.API.STREAM.INFO.${STREAMS.openWork.name}`))).toBe(true);
    expect(requests.filter((r) => r.includes(STREAMS.events.name))).toEqual([]);
    for (const id of history) expect(requests.some((r) => r.includes(id))).toBe(false);
  });

  it("a partition whose log predates the index is scanned in full once, then only from the index", async () => {
    const partition = 3;
    const legacy = idIn(partition, "scan-legacy");
    await open(legacy);
    await ended(partition, "scan-legacy-ended", 3);
    const scanInto = (calls: string[]) =>
      scan(partition, async (sessionId) => {
        calls.push(sessionId);
      });
    const first: string[] = [];
    expect(await scanInto(first)).toEqual({ listed: 0, fullScan: true, recovered: 1 });
    expect(first).toEqual([legacy]);
    expect(await index.scanned(partition)).toBe(true);
    const second: string[] = [];
    const requests = await apiRequests(async () =>
      expect(await scanInto(second)).toEqual({ listed: 0, fullScan: false, recovered: 0 }),
    );
    expect(second).toEqual([]);
    expect(requests.some((r) => r.startsWith(`$JS.API.STREAM.INFO.${STREAMS.openWork.name}`))).toBe(true);
    expect(requests.filter((r) => r.includes(STREAMS.events.name))).toEqual([]);
  });

  it("an entry written and removed leaves nothing behind in the index", async () => {
    const partition = 0;
    const id = idIn(partition, "scan-churn");
    for (let i = 0; i < 5; i++) {
      await index.mark(partition, id, () => false);
      expect(await index.list(partition)).toContain(id);
      await index.unmark(partition, id);
      expect(await index.list(partition)).not.toContain(id);
    }
    const info = await (await jetstreamManager(nc)).streams.info(STREAMS.openWork.name, {
      subjects_filter: subjects.openWork(partition, id),
    });
    expect(info.state.subjects ?? {}).toEqual({});
  });

  it("stops retrying once the partition is let go", async () => {
    const partition = 2;
    await index.noteScanned(partition);
    const gone = idIn(partition, "scan-gone");
    await open(gone);
    await index.mark(partition, gone, () => false);
    let held = true;
    let calls = 0;
    await scan(
      partition,
      async (sessionId) => {
        if (sessionId !== gone) return;
        calls++;
        if (calls === 2) held = false;
        throw new Error("timeout");
      },
      { active: () => held },
    );
    expect(calls).toBe(2);
  });
});
