// A namespace built by a store from before the indexes (no `<ns>:indexes` marker) is rebuilt once
// at start, in the background, and then answers the index queries (PROTOCOL change 44).
import type { EventBody, FleetEvent } from "@fleet/protocol";
import { SYNTHETIC_CONFIG } from "@fleet/session-store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  activateNamespaceFromStart,
  type Fixture,
  Publisher,
  query,
  type StoreProcess,
  spawnStore,
  startFixture,
  waitFor,
  waitProjected,
} from "./support.js";

let f: Fixture;
const procs: StoreProcess[] = [];

beforeAll(async () => {
  f = await startFixture({ partitions: 2 });
});

afterAll(async () => {
  for (const p of procs) await p.kill();
  await f?.stop();
});

const event = (sid: string, n: number, body: EventBody): FleetEvent =>
  ({
    ...body,
    meta: { v: 1, id: `${sid}-e${n}`, sessionId: sid, ts: 1_770_000_000_000 + n, producer: "t" },
  }) as FleetEvent;

describe("store index upgrade", () => {
  it("rebuilds a namespace without the index marker, then lists its open runs", async () => {
    const ns = await activateNamespaceFromStart(f.redis, f.prefix);
    const publisher = new Publisher(f.js, f.partitions);
    for (const sid of ["up-1", "up-2"]) {
      await publisher.publish(event(sid, 1, { type: "session_created", config: SYNTHETIC_CONFIG }));
      await publisher.publish(event(sid, 2, { type: "agent_start" }));
    }
    const first = await spawnStore(f, { env: { FLEET_WORKER_ID: "up-a" } });
    procs.push(first);
    await waitProjected(f, publisher);
    await first.kill("SIGTERM");
    // What an older store leaves: the sessions, no indexes, no marker.
    await f.redis.del(`${f.prefix}:${ns}:indexes`, `${f.prefix}:${ns}:idx:running`, `${f.prefix}:${ns}:idx:search`);
    const second = await spawnStore(f, { env: { FLEET_WORKER_ID: "up-b" } });
    procs.push(second);
    const rebuiltNs = await waitFor("the upgrade rebuild", async () => {
      const active = await f.redis.hget(`${f.prefix}:ctl`, "ns");
      return active !== ns && active !== null ? active : undefined;
    });
    expect(await f.redis.get(`${f.prefix}:${rebuiltNs}:indexes`)).toBe("1");
    expect(second.output()).toContain('"evt":"store_index_upgrade_started"');
    const running = await query(f.nc, "list_running", {});
    expect((running.sessions as Array<{ sessionId: string }>).map((s) => s.sessionId)).toEqual(["up-1", "up-2"]);
    const found = await query(f.nc, "search_sessions", { q: "up-2" });
    expect((found.sessions as Array<{ sessionId: string }>).map((s) => s.sessionId)).toEqual(["up-2"]);
  }, 120_000);
});
