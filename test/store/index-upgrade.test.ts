// A namespace built by a store from before the indexes (no `<ns>:indexes` marker) is rebuilt once
// at start, in the background, and then answers the index queries (PROTOCOL change 44).
import type { EventBody, FleetEvent } from "@fleet/protocol";
import { ALL_SHARDS, INDEX_VERSION, indexKeys, indexVersionKey, SYNTHETIC_CONFIG } from "@fleet/session-store/testing";
import { describe, expect, it } from "vitest";
import {
  activateNamespaceFromStart,
  Publisher,
  query,
  spawnStore,
  useStoreFixture,
  waitFor,
  waitProjected,
} from "./support.js";

const fixture = useStoreFixture({ partitions: 2 });

const event = (sid: string, n: number, body: EventBody): FleetEvent =>
  ({
    ...body,
    meta: { v: 1, id: `${sid}-e${n}`, sessionId: sid, ts: 1_770_000_000_000 + n, producer: "t" },
  }) as FleetEvent;

describe("store index upgrade", () => {
  it("rebuilds a namespace without the index marker, then lists its open runs", async () => {
    const ns = await activateNamespaceFromStart(fixture.f.redis, fixture.f.prefix);
    const publisher = new Publisher(fixture.f.js, fixture.f.partitions);
    for (const sid of ["up-1", "up-2"]) {
      await publisher.publish(event(sid, 1, { type: "session_created", config: SYNTHETIC_CONFIG }));
      await publisher.publish(event(sid, 2, { type: "agent_start" }));
    }
    const first = await spawnStore(fixture.f, { env: { FLEET_WORKER_ID: "up-a" } });
    fixture.procs.push(first);
    await waitProjected(fixture.f, publisher);
    await first.kill("SIGTERM");
    // What an older store leaves: the sessions, no indexes, no marker.
    await fixture.f.redis.del(indexVersionKey(fixture.f.prefix, ns));
    for (const k of ALL_SHARDS) {
      const idx = indexKeys(fixture.f.prefix, ns, k);
      await fixture.f.redis.del(idx.running, idx.search);
    }
    const second = await spawnStore(fixture.f, { env: { FLEET_WORKER_ID: "up-b" } });
    fixture.procs.push(second);
    const rebuiltNs = await waitFor("the upgrade rebuild", async () => {
      const active = await fixture.f.redis.hget(`${fixture.f.prefix}:ctl`, "ns");
      return active !== ns && active !== null ? active : undefined;
    });
    expect(await fixture.f.redis.get(indexVersionKey(fixture.f.prefix, rebuiltNs))).toBe(INDEX_VERSION);
    expect(second.output()).toContain('"evt":"store_index_upgrade_started"');
    const running = await query(fixture.f.nc, "list_running", {});
    expect((running.sessions as Array<{ sessionId: string }>).map((s) => s.sessionId)).toEqual(["up-1", "up-2"]);
    const found = await query(fixture.f.nc, "search_sessions", { q: "up-2" });
    expect((found.sessions as Array<{ sessionId: string }>).map((s) => s.sessionId)).toEqual(["up-2"]);
  }, 120_000);
});
