import { runnerPresenceKey } from "@fleet/protocol";
import { connectNats } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { watchRunnerPresence } from "./runner-presence-view.js";

let server: NatsServer;
let nc: NatsConnection;
let kv: KV;

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "presence-test" });
  kv = await new Kvm(nc).create("presence_test");
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const presence = (runnerId: string, tools: string[]) =>
  kv.put(
    runnerPresenceKey(runnerId),
    JSON.stringify({
      runnerId,
      tools: Object.fromEntries(tools.map((t) => [t, { version: "1", schemaHash: "h" }])),
      startedAt: 1,
      ts: 1,
    }),
  );
const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  return cond();
};

describe("runner presence view", () => {
  it("knows runners written before it started, follows new ones, and drops deleted or silent ones", async () => {
    await presence("r-old", ["ls"]);
    await kv.put("loop.p.0", "not a runner");
    await kv.put(runnerPresenceKey("r-junk"), "{not json");
    let now = 1_000;
    const view = watchRunnerPresence(kv, { ttlMs: 500, now: () => now });
    await view.ready;
    expect(view.serves("ls")).toBe(true);
    expect(view.serves("bash")).toBe(false);

    await presence("r-new", ["bash"]);
    expect(await until(() => view.serves("bash"))).toBe(true);

    await kv.delete(runnerPresenceKey("r-new"));
    expect(await until(() => !view.serves("bash"))).toBe(true);

    // No heartbeat for longer than the TTL: the key may still exist (2.9 tells no watcher) but the
    // runner no longer counts; a new heartbeat brings it back.
    now += 501;
    expect(view.serves("ls")).toBe(false);
    await presence("r-old", ["ls"]);
    expect(await until(() => view.serves("ls"))).toBe(true);
    view.stop();
  });

  it("whenServed waits for a stale runner to announce itself again, and gives up at once on tools nobody served lately", async () => {
    await presence("r-wait", ["grep"]);
    let now = 10_000;
    const view = watchRunnerPresence(kv, { ttlMs: 500, now: () => now });
    await view.ready;
    expect(await view.whenServed("grep", 1_000)).toBe(true);

    // Stale (as after a bus outage): the call waits until the runner writes its presence again.
    now += 600;
    const started = Date.now();
    const waiting = view.whenServed("grep", 5_000);
    setTimeout(() => void presence("r-wait", ["grep"]), 200);
    expect(await waiting).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);

    // Stale and never rewritten: false after the timeout.
    now += 600;
    const t0 = Date.now();
    expect(await view.whenServed("grep", 300)).toBe(false);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);

    // Not seen within 30 s, or never served: false without waiting.
    now += 30_001;
    const t1 = Date.now();
    expect(await view.whenServed("grep", 5_000)).toBe(false);
    expect(await view.whenServed("nothing-serves-this", 5_000)).toBe(false);
    expect(Date.now() - t1).toBeLessThan(100);
    view.stop();
  });

  it("whenServed on a view started moments ago waits for runners it has not seen yet", async () => {
    // A worker started while the bus was down: no runner has written its presence again yet.
    const fresh = await new Kvm(nc).create("presence_fresh");
    let now = 50_000;
    const view = watchRunnerPresence(fresh, { ttlMs: 500, now: () => now });
    await view.ready;
    const waiting = view.whenServed("sed", 5_000);
    setTimeout(
      () =>
        void fresh.put(
          runnerPresenceKey("r-late"),
          JSON.stringify({
            runnerId: "r-late",
            tools: { sed: { version: "1", schemaHash: "h" } },
            startedAt: 1,
            ts: 1,
          }),
        ),
      200,
    );
    expect(await waiting).toBe(true);
    // Once the view is older than the window, a tool nobody served fails at once again.
    now += 30_001;
    const t0 = Date.now();
    expect(await view.whenServed("nothing-serves-this", 5_000)).toBe(false);
    expect(Date.now() - t0).toBeLessThan(100);
    view.stop();
  });
});
