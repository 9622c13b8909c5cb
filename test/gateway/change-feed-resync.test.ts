// The change feed after notices may have been lost (PROTOCOL change 75): the store's notices are
// core NATS, so a gateway whose connection to NATS was down missed any sent meanwhile. Once it is
// back, the feed's next frame says `all` (a view loads everything again), and frames name
// sessions again after it. Real nats-server (restarted on its port, JetStream kept), store, loop
// worker and gateway.
import { openSse, type SseFrame } from "@fleet/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type GatewayStack, startGatewayStack } from "./support.js";

let stack: GatewayStack;

beforeAll(async () => {
  stack = await startGatewayStack();
}, 60_000);
afterAll(async () => {
  await stack?.stop();
});

interface Frame {
  sessions: string[];
  approvals: boolean;
  all: boolean;
}

/** Collects the `changes` frames of a stream as they come, until it ends. */
function collect(frames: AsyncIterable<SseFrame>): Frame[] {
  const seen: Frame[] = [];
  void (async () => {
    for await (const f of frames) if (f.event === "changes") seen.push(JSON.parse(f.data ?? "{}") as Frame);
  })();
  return seen;
}

describe("gateway / change feed after a lost connection", () => {
  it("says `all` once the gateway's NATS connection is back, then names sessions again", async () => {
    expect((await call(stack.gateway.url, "POST", "/v1/sessions", { body: { sessionId: "s-resync" } })).status).toBe(
      201,
    );
    const feed = await openSse(`${stack.gateway.url}/v1/changes`);
    expect(feed.status).toBe(200);
    const frames = collect(feed.frames);
    try {
      await stack.nats.restart();
      // The reconnect waits out nats.js's reconnect delay (2 s, jittered), longer on a loaded machine.
      await expect
        .poll(() => frames.find((f) => f.all), { timeout: 45_000, interval: 100 })
        .toEqual({ sessions: [], approvals: true, all: true });

      // The feed's subscriptions came back with the connection.
      const named = async () => {
        const sent = await call(stack.gateway.url, "POST", "/v1/sessions/s-resync/commands", {
          body: { type: "set_name", name: "After the outage", commandId: "c-resync-name" },
        });
        return sent.status;
      };
      // 503 while the gateway reconnects; the same commandId never runs twice.
      await expect.poll(named, { timeout: 30_000, interval: 500 }).toBe(200);
      await expect
        .poll(() => frames.some((f) => !f.all && f.sessions.includes("s-resync")), { timeout: 30_000 })
        .toBe(true);
    } finally {
      feed.close();
    }
  });
});
