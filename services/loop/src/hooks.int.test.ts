import { connectNats } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createRemoteHookClient } from "./hooks.js";

let server: NatsServer;
let nc: NatsConnection;
const subs: Subscription[] = [];
const signal = new AbortController().signal;

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "hooks-test" });
});
afterEach(() => {
  for (const s of subs.splice(0)) s.unsubscribe();
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const call = {
  toolCall: { type: "toolCall" as const, id: "t1", name: "bash", arguments: { command: "ls" } },
  args: { command: "ls" },
  assistantMessage: undefined as never,
  context: undefined as never,
};

/** A before_tool_call responder that blocks every call and counts the requests it saw. */
async function blockingHook(reason: string) {
  const seen: unknown[] = [];
  subs.push(
    nc.subscribe("fleet.hook.before_tool_call", {
      callback: (_e, m) => {
        seen.push(m.json());
        m.respond(JSON.stringify({ block: true, reason }));
      },
    }),
  );
  await nc.flush();
  return seen;
}

describe("remote hook client", () => {
  it("trusts 'no responders' for recheckMs, then asks again and applies the hook", async () => {
    let now = 1_000;
    const hooks = createRemoteHookClient(nc, { timeoutMs: 1_000, recheckMs: 500, now: () => now }).forSession("s-1");
    expect(await hooks.beforeToolCall?.(call, signal)).toBeUndefined();

    const seen = await blockingHook("policy");
    now += 499;
    // Still inside the recheck window: the new responder is not asked yet.
    expect(await hooks.beforeToolCall?.(call, signal)).toBeUndefined();
    expect(seen).toHaveLength(0);

    now += 1;
    expect(await hooks.beforeToolCall?.(call, signal)).toEqual({ block: true, reason: "policy" });
    expect(seen).toEqual([{ sessionId: "s-1", toolCall: call.toolCall, args: call.args }]);
    // A present hook is asked on every call.
    expect(await hooks.beforeToolCall?.(call, signal)).toEqual({ block: true, reason: "policy" });
    expect(seen).toHaveLength(2);
  });

  it("with recheckMs 0 asks on every call", async () => {
    const hooks = createRemoteHookClient(nc, { timeoutMs: 1_000, recheckMs: 0, now: () => 0 }).forSession("s-2");
    expect(await hooks.beforeToolCall?.(call, signal)).toBeUndefined();
    await blockingHook("now");
    expect(await hooks.beforeToolCall?.(call, signal)).toEqual({ block: true, reason: "now" });
  });

  it("a request that times out across a NATS restart is asked again, not turned into a block", async () => {
    const hooks = createRemoteHookClient(nc, { timeoutMs: 700, recheckMs: 0, now: () => 0 }).forSession("s-3");
    process.kill(server.pid as number, "SIGKILL");
    await new Promise((r) => setTimeout(r, 100));
    const asked = hooks.beforeToolCall?.(call, signal);
    await new Promise((r) => setTimeout(r, 1_000));
    await server.restart();
    // No hook is installed: after the reconnect the answer is "no responders", i.e. not blocked.
    expect(await asked).toBeUndefined();
  }, 30_000);
});
