// The whole stack on a log of 3 stream groups: prompts through the gateway run in every group, and
// the gateway's SSE history, the SDK and the store read each session from its group's stream.
import { openSse, type SseFrame } from "@fleet/gateway/testing";
import { eventStreamNames } from "@fleet/protocol";
import { fakeReply } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionPerGroup as sessionsPerGroup } from "../support/session-per-group.js";
import { call, type GatewayStack, PARTITIONS, startGatewayStack, waitIdle } from "./support.js";
import { startReceiver } from "./webhook-receivers.js";

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
const sessionPerGroup = () => sessionsPerGroup("s-grp-", PARTITIONS, 3);

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

  it("delivers a webhook for every session from every group's stream, and a session's from its group's", async () => {
    const receiver = await startReceiver("127.0.0.1");
    try {
      const url = `${receiver.base}/hook`;
      const events = ["command_accepted", "agent_end"];
      const all = await call(base, "POST", "/v1/webhooks", { body: { url, events } });
      expect(all.status, JSON.stringify(all.body)).toBe(201);
      expect(all.body.startSeqs).toHaveLength(3);
      const sessions = sessionPerGroup();
      const sid = sessions[2] as string;
      const one = await call(base, "POST", "/v1/webhooks", { body: { url, events, sessionId: sid } });
      expect(one.status).toBe(201);
      expect(one.body.startSeqs).toBeUndefined();
      // One unfiltered consumer per group's stream for the first, the session's subject for the second.
      for (const [g, stream] of eventStreamNames(3).entries()) {
        const info = await stack.client.jsm.consumers.info(stream, `webhook-${all.body.id}`);
        expect(info.config.filter_subject ?? "").toBe("");
        expect(info.config.opt_start_seq).toBe(all.body.startSeqs[g]);
      }
      const info = await stack.client.jsm.consumers.info("FLEET_EVENTS_G2", `webhook-${one.body.id}`);
      expect(info.config.filter_subject).toBe(stack.client.eventSubject(sid));

      for (const [g, s] of sessions.entries()) {
        stack.fake.script(fakeReply(`hooked in group ${g}`));
        const sent = await call(base, "POST", `/v1/sessions/${s}/commands`, { body: { type: "prompt", text: "hi" } });
        expect(sent.status).toBe(200);
      }
      const expected = new Map<string, string[]>();
      for (const [g, s] of sessions.entries()) {
        await waitIdle(stack.client, s, 4);
        const keys: string[] = [];
        for await (const r of stack.client.history(s, { fromSeq: 1 })) {
          const type = (JSON.parse(new TextDecoder().decode(r.data)) as { type: string }).type;
          if (events.includes(type) && r.seq >= all.body.startSeqs[g]) keys.push(`${g}.${r.seq}`);
        }
        expected.set(s, keys);
      }
      const keysOf = (webhookId: string, s: string) =>
        receiver.requests
          .filter((r) => r.headers["fleet-webhook-id"] === webhookId && JSON.parse(r.body).sessionId === s)
          .map((r) => r.headers["idempotency-key"]);
      const deadline = Date.now() + 15_000;
      const done = () =>
        sessions.every((s) => keysOf(all.body.id, s).length >= (expected.get(s)?.length ?? 0)) &&
        keysOf(one.body.id, sid).length >= (expected.get(sid)?.length ?? 0);
      while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      // Every session's matching events, each group's keyed `<g>.<seq>`; the session's webhook keys by sequence.
      for (const s of sessions) expect(keysOf(all.body.id, s)).toEqual(expected.get(s));
      expect(keysOf(one.body.id, sid)).toEqual(expected.get(sid)?.map((k) => k.split(".")[1]));

      const removed = await call(base, "DELETE", `/v1/webhooks/${all.body.id}`);
      expect(removed.status).toBe(204);
      for (const stream of eventStreamNames(3)) {
        await expect(stack.client.jsm.consumers.info(stream, `webhook-${all.body.id}`)).rejects.toThrow();
      }
    } finally {
      await receiver.close();
    }
  });
});
