// An archive decided by a worker that took the session's partition over (a lease lost under load,
// a restart): that worker's first write is its `owner_change`, before the archive's outcome, so the
// archive holds one event more than the log the last owner left. The tombstone, the lifecycle
// records and the archive's header count exactly the events the archive holds.
import { FleetClient } from "@fleet/client";
import { createScriptedProvider } from "@fleet/loop";
import { applyTopology, connectNats } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitIdle } from "../gateway/support.js";
import { startTestWorker } from "../support/loop-harness.js";
import { archivedEvents, storedEvents } from "./support.js";

const PARTITIONS = 4;
let server: NatsServer;
let client: FleetClient;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  server = await startNats();
  const setup = await connectNats({ url: server.url, name: "takeover-archive-setup" });
  await applyTopology(setup, { partitions: PARTITIONS, leaseTtlMs: 2_000 });
  await setup.close();
  client = await FleetClient.connect({ natsUrl: server.url, name: "takeover-archive-test" });
});
afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await client?.close();
  await server?.stop();
});

/** A loop worker answering every prompt with one text; no session store (none to wait for). */
async function loopWorker(workerId: string) {
  const scripted = createScriptedProvider({
    steps: Array.from({ length: 4 }, (_, i) => ({ text: `answer ${i}` })),
    now: Date.now,
  });
  const started = await startTestWorker({
    url: server.url,
    workerId,
    partitions: PARTITIONS,
    providers: { scripted: scripted.streamFn },
    lifecycle: { storeAbsentMs: 300 },
  });
  const stop = async () => {
    await started.worker.stop();
    await started.nc.close();
  };
  stops.push(stop);
  return { ...started, stop };
}

describe("session lifecycle / an archive after a takeover", () => {
  it("counts the new owner's owner_change: tombstone, records and archive agree", async () => {
    const sid = "lc-takeover-arc";
    const first = await loopWorker("loop-first");
    await client.prompt(sid, "hello");
    await waitIdle(client, sid, 2);
    const left = await storedEvents(client, sid);
    // The first owner lets its partitions go; the next one claims them at a new epoch.
    await first.stop();
    const next = await loopWorker("loop-next");
    expect(next.worker.held()).toHaveLength(PARTITIONS);

    const archived = await client.archiveSession(sid, { by: "takeover-test", timeoutMs: 60_000 });
    const parsed = await archivedEvents(client, sid);
    const kept = parsed.events;
    // The archive is the log before the archive's outcome: what the first owner left, then the
    // next owner's announcement.
    expect(kept.slice(0, left.length)).toEqual(left);
    expect(kept.slice(left.length).map((e) => [e.type, e.type === "owner_change" && e.workerId])).toEqual([
      ["owner_change", "loop-next"],
    ]);
    expect(archived).toMatchObject({ type: "session_archived", events: kept.length });
    expect(parsed.header.events).toBe(kept.length);

    const restored = await client.restoreSession(sid, { by: "takeover-test", timeoutMs: 60_000 });
    expect(restored).toMatchObject({ type: "session_restored", events: kept.length });
    const back = await storedEvents(client, sid);
    expect(back.find((e) => e.type === "session_restored")).toMatchObject({ events: kept.length });
  });
});
