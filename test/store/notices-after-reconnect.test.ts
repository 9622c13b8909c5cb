// The store's applied notices across a lost connection (PROTOCOL change 75): a notice in flight when
// the store's connection dropped is gone, so the first notice of each group after the connection
// comes back says `all`, and later ones name their sessions again. Real nats-server, restarted on
// its port.
import { type StoreAppliedNotice, subjects } from "@fleet/protocol";
import { connectNats, createLogger } from "@fleet/runtime";
import { createAppliedAnnouncer } from "@fleet/session-store/testing";
import { type NatsServer, startNats } from "@fleet/testkit";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let server: NatsServer;
let store: NatsConnection;
let watcher: NatsConnection;
const heard: StoreAppliedNotice[] = [];

beforeAll(async () => {
  server = await startNats();
  store = await connectNats({ url: server.url, name: "notices-store" });
  watcher = await connectNats({ url: server.url, name: "notices-watcher" });
  watcher.subscribe(subjects.storeAppliedAll, {
    callback: (err, msg) => {
      if (!err) heard.push(msg.json<StoreAppliedNotice>());
    },
  });
  await watcher.flush();
});
afterAll(async () => {
  await store?.close();
  await watcher?.close();
  await server?.stop();
});

/** Resolves once `nc` reconnected. */
async function reconnected(nc: NatsConnection): Promise<void> {
  for await (const s of nc.status()) if (s.type === "reconnect") return;
}

describe("session store / applied notices after a lost connection", () => {
  it("says `all` for each group's first notice once the connection is back, then names sessions again", async () => {
    const announce = createAppliedAnnouncer(store, createLogger("notices-test", { level: "silent" }));
    announce(0, 5, { sessions: ["s-a"], approvals: false });
    await expect.poll(() => heard.length).toBe(1);
    expect(heard[0]).toMatchObject({ group: 0, seq: 5, sessions: ["s-a"] });

    const back = Promise.all([reconnected(store), reconnected(watcher)]);
    await server.restart();
    await back;
    await watcher.flush();
    await new Promise((r) => setTimeout(r, 100));

    announce(0, 6, { sessions: ["s-b"], approvals: false });
    announce(0, 7, { sessions: ["s-c"], approvals: true });
    // Group 1 had no notice before: none of it was lost.
    announce(1, 3, { sessions: ["s-d"], approvals: false });
    await expect.poll(() => heard.length, { timeout: 10_000 }).toBe(4);
    expect(heard.slice(1)).toEqual([
      { group: 0, seq: 6, sessions: [], approvals: true, all: true },
      { group: 0, seq: 7, sessions: ["s-c"], approvals: true },
      { group: 1, seq: 3, sessions: ["s-d"], approvals: false },
    ]);
  });
});
