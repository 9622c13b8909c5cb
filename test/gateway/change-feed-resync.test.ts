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

/** Polls `check` every 100 ms until it holds or `ms` pass; whether it held. */
async function waitUntil(check: () => boolean, ms: number): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; ) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
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
      const restartedAt = Date.now();
      const seen = () => `${Date.now() - restartedAt} ms after the restart; frames: ${JSON.stringify(frames)}`;
      // The reconnect waits out nats.js's reconnect delay, longer on a loaded machine.
      const all = await waitUntil(() => frames.some((f) => f.all), 45_000);
      expect(all, `no \`all\` frame: ${seen()}`).toBe(true);
      expect(frames.find((f) => f.all)).toEqual({ sessions: [], approvals: true, all: true });

      // The feed's subscriptions came back with the connection: a change names its session again.
      // A window that also holds an `all` notice is sent as `all` (the store announces one when its
      // lease moved during the restart), so the change is made again until a frame names it.
      let named = false;
      const answers: number[] = [];
      for (let attempt = 0; attempt < 3 && !named; attempt++) {
        const from = frames.length;
        // 503 while the gateway reconnects, 202 while the loop worker does; one commandId never runs twice.
        for (const deadline = Date.now() + 45_000; Date.now() < deadline; ) {
          const sent = await call(stack.gateway.url, "POST", "/v1/sessions/s-resync/commands", {
            body: { type: "set_name", name: `After the outage ${attempt}`, commandId: `c-resync-name-${attempt}` },
          });
          answers.push(sent.status);
          if (sent.status === 200) break;
          await new Promise((r) => setTimeout(r, 500));
        }
        expect(answers.at(-1), `set_name answered ${answers.join(", ")}: ${seen()}`).toBe(200);
        await waitUntil(
          () => frames.length > from && frames.slice(from).some((f) => f.sessions.includes("s-resync") || f.all),
          45_000,
        );
        named = frames.slice(from).some((f) => !f.all && f.sessions.includes("s-resync"));
      }
      expect(named, `no frame named s-resync: ${seen()}`).toBe(true);
    } finally {
      feed.close();
    }
  }, 180_000);
});
