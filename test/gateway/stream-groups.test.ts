// The whole stack on a log of 3 stream groups: prompts through the gateway run in every group, and
// the gateway's SSE history, the SDK and the store read each session from its group's stream.
import { openSse, type SseFrame } from "@fleet/gateway/testing";
import { eventStreamNames, groupOf, partitionOf } from "@fleet/protocol";
import { fakeReply } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type GatewayStack, PARTITIONS, startGatewayStack, waitIdle } from "./support.js";

let stack: GatewayStack;
let base: string;

beforeAll(async () => {
  stack = await startGatewayStack({ groups: 3 });
  base = stack.gateway.url;
}, 60_000);
afterAll(async () => {
  await stack?.stop();
});

/** One session id per group (partition p mod 3 = g). */
function sessionPerGroup(): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < 3; i++) {
    const sid = `s-grp-${i}`;
    if (groupOf(partitionOf(sid, PARTITIONS), 3) === out.length) out.push(sid);
  }
  return out;
}

describe("gateway / a log of 3 stream groups", () => {
  it("runs prompts in every group and serves each session's history from its group's stream", async () => {
    expect(stack.client.groups).toBe(3);
    const sessions = sessionPerGroup();
    for (const [g, sid] of sessions.entries()) {
      stack.fake.script(fakeReply(`answer from group ${g}`));
      const sent = await call(base, "POST", `/v1/sessions/${sid}/commands`, { body: { type: "prompt", text: "hi" } });
      expect(sent.status).toBe(200);
      expect(sent.body.event.type).toBe("command_accepted");
      await waitIdle(stack.client, sid, 2);
      expect(stack.client.eventStream(sid)).toBe(`FLEET_EVENTS_G${g}`);
      // Its events are in its group's stream and in no other.
      for (const stream of eventStreamNames(3)) {
        const info = await stack.client.jsm.streams.info(stream, { subjects_filter: `fleet.evt.*.${sid}` });
        expect(Object.keys(info.state.subjects ?? {}).length, stream).toBe(stream === `FLEET_EVENTS_G${g}` ? 1 : 0);
      }
      const end = await stack.client.lastSeq(sid);
      const sse = await openSse(`${base}/v1/sessions/${sid}/events?follow=false`);
      const frames: SseFrame[] = [];
      for await (const f of sse.frames) frames.push(f);
      const seqs = frames.filter((f) => f.id !== undefined).map((f) => Number(f.id));
      expect(seqs.at(-1)).toBe(end);
      expect((await stack.client.replay(sid)).seq).toBe(end);
      const got = await call(base, "GET", `/v1/sessions/${sid}`);
      expect(got.body).toMatchObject({ status: "idle", seq: end });
      const tree = await stack.client.getTree(sid, { minSeq: end });
      expect(tree.entries.length).toBeGreaterThanOrEqual(2);
    }
    // One durable store consumer per group, none filtered.
    for (const [g, stream] of eventStreamNames(3).entries()) {
      const durable = [];
      for await (const c of stack.client.jsm.consumers.list(stream)) if (c.config.durable_name) durable.push(c);
      expect(durable.map((c) => [c.name, c.config.filter_subject ?? ""])).toEqual([[`store-g${g}`, ""]]);
    }
  });

  it("refuses a webhook for every session, and delivers a session's webhook from its group's stream", async () => {
    const all = await call(base, "POST", "/v1/webhooks", { body: { url: "http://127.0.0.1:9/hook", events: ["*"] } });
    expect(all.status).toBe(400);
    expect(all.body.error.code).toBe("unsupported");
    const sid = sessionPerGroup()[2] as string;
    const one = await call(base, "POST", "/v1/webhooks", {
      body: { url: "http://127.0.0.1:9/hook", events: ["*"], sessionId: sid },
    });
    expect(one.status).toBe(201);
    const info = await stack.client.jsm.consumers.info("FLEET_EVENTS_G2", `webhook-${one.body.id}`);
    expect(info.config.filter_subject).toBe(stack.client.eventSubject(sid));
  });
});
