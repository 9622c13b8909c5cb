// The change feed (`createChangeFeed` of @fleet/client, behind the SDK's `changes()` and the
// gateway's `GET /v1/changes`) on a real nats-server: store notices and lifecycle records coalesced
// into one frame per window; a namespace switch, a window past the cap, and missed notices each give
// one `all` frame (PROTOCOL change 75).

import { type ChangeBatch, createChangeFeed, MAX_FRAME_SESSIONS } from "@fleet/client";
import { storeAllNotice, storeAppliedNotices, subjects } from "@fleet/protocol";
import { connectNats, createLogger } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const WINDOW_MS = 50;
let server: NatsServer;
let nc: NatsConnection;
let store: NatsConnection;

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "change-feed-test" });
  store = await connectNats({ url: server.url, name: "change-feed-test-store" });
});
afterAll(async () => {
  await nc?.close();
  await store?.close();
  await server?.stop();
});

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function follow() {
  const feed = createChangeFeed(nc, { windowMs: WINDOW_MS, logger: createLogger("feed", { level: "silent" }) });
  const frames: ChangeBatch[] = [];
  const leave = feed.join((batch) => frames.push(batch));
  return { feed, frames, leave };
}

async function publish(...notices: Array<ReturnType<typeof storeAllNotice>>) {
  await nc.flush();
  for (const n of notices) store.publish(subjects.storeApplied(n.group), encode(n));
  store.publish(subjects.lifecycle("s-gone"), encode({ type: "session_deleted" }));
  await store.flush();
}

describe("client / change feed on a real server", () => {
  it("coalesces a window's notices and lifecycle records into one frame", async () => {
    const { frames, leave } = follow();
    await publish(...storeAppliedNotices(0, 10, ["s-1", "s-2"], false), ...storeAppliedNotices(1, 4, ["s-2"], false));
    await expect.poll(() => frames.length).toBe(1);
    await sleep(WINDOW_MS * 3);
    leave();
    expect(frames).toHaveLength(1);
    expect({ ...frames[0], sessions: frames[0]?.sessions.sort() }).toEqual({
      sessions: ["s-1", "s-2", "s-gone"],
      approvals: true,
      all: false,
    });
  });

  it("a namespace switch's notice gives an `all` frame, with no sessions named", async () => {
    const { frames, leave } = follow();
    await publish(...storeAppliedNotices(0, 11, ["s-3"], false), storeAllNotice(1, 7));
    await expect.poll(() => frames.length).toBe(1);
    leave();
    expect(frames[0]).toEqual({ sessions: [], approvals: true, all: true });
  });

  it(`a window that changed more than ${MAX_FRAME_SESSIONS} sessions is sent as \`all\``, async () => {
    const { frames, leave } = follow();
    const many = Array.from({ length: MAX_FRAME_SESSIONS + 1 }, (_, i) => `s-many-${i}`);
    await publish(...storeAppliedNotices(0, 12, many, false));
    await expect.poll(() => frames.length).toBe(1);
    expect(frames[0]).toEqual({ sessions: [], approvals: true, all: true });
    frames.length = 0;
    // Exactly the cap is still named.
    await publish(...storeAppliedNotices(0, 13, many.slice(0, MAX_FRAME_SESSIONS - 1), false));
    await expect.poll(() => frames.length).toBe(1);
    leave();
    expect(frames[0]?.all).toBe(false);
    expect(frames[0]?.sessions).toHaveLength(MAX_FRAME_SESSIONS);
  });

  it("missed notices give one `all` frame while someone follows, and nothing once nobody does", async () => {
    const { feed, frames, leave } = follow();
    feed.missed();
    feed.missed();
    await expect.poll(() => frames.length).toBe(1);
    expect(frames[0]).toEqual({ sessions: [], approvals: true, all: true });
    leave();
    const later: ChangeBatch[] = [];
    feed.missed();
    const again = feed.join((batch) => later.push(batch));
    await sleep(WINDOW_MS * 3);
    again();
    expect(later).toEqual([]);
  });
});
