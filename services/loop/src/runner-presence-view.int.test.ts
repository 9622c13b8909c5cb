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
});
