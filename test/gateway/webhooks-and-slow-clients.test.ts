// Webhooks delivered to a local receiver (signed, idempotency key = stream sequence, retried, none
// lost across a gateway restart), and SSE clients that read slowly.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { IDEMPOTENCY_HEADER, SIGNATURE_HEADER, verifySignature } from "@fleet/gateway";
import { openSse, type SseFrame } from "@fleet/gateway/testing";
import { encodeEvent, partitionOf, subjects } from "@fleet/protocol";
import { newId } from "@fleet/runtime";
import { fakeReply } from "@fleet/testkit";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type GatewayStack, PARTITIONS, startGatewayStack } from "./support.js";

let stack: GatewayStack;

beforeAll(async () => {
  stack = await startGatewayStack({ gateway: { sseBufferBytes: 64 * 1024 } });
}, 60_000);
afterAll(async () => {
  await stack?.stop();
});

interface Received {
  seq: number;
  type: string;
  sessionId: string;
  signed: boolean;
}

/** A webhook receiver that fails the first `failFirst` requests with 500. */
async function startReceiver(secret: () => string, failFirst = 0) {
  const received: Received[] = [];
  let requests = 0;
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      requests++;
      if (requests <= failFirst) {
        res.writeHead(500).end("try again");
        return;
      }
      const parsed = JSON.parse(body) as { seq: number; sessionId: string; event: { type: string } };
      expect(req.headers[IDEMPOTENCY_HEADER]).toBe(String(parsed.seq));
      received.push({
        seq: parsed.seq,
        type: parsed.event.type,
        sessionId: parsed.sessionId,
        signed: verifySignature(secret(), body, req.headers[SIGNATURE_HEADER] as string | undefined),
      });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    requests: () => requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function runPrompt(base: string, sessionId: string, text: string) {
  stack.fake.script(fakeReply(`answer to ${text}`));
  const sent = await call(base, "POST", `/v1/sessions/${sessionId}/commands`, { body: { type: "prompt", text } });
  expect(sent.body.event.type).toBe("command_accepted");
  const live = await stack.client.state(sessionId);
  try {
    await live.waitFor((v) => !v.agent.isStreaming && v.agent.messages.at(-1)?.role === "assistant", 30_000);
  } finally {
    live.close();
  }
}

/** Sequences of the session's events of these types at or after `from`, from the log. */
async function logSeqs(sessionId: string, types: string[], from: number) {
  const view = await stack.client.replay(sessionId);
  const out: number[] = [];
  for await (const item of stack.client.events(sessionId, { from })) {
    if (types.includes(item.event.type)) out.push(item.seq);
    if (item.seq >= view.seq) break;
  }
  return out;
}

describe("gateway / slow SSE clients", () => {
  it("drops a client that stops reading while a fast one gets every event; the dropped one resumes exactly", async () => {
    const sessionId = "s-slow-1";
    const base = stack.gateway.url;
    expect((await call(base, "POST", "/v1/sessions", { body: { sessionId } })).status).toBe(201);
    const start = await stack.client.lastSeq(sessionId);
    const url = `${base}/v1/sessions/${sessionId}/events`;
    const slow = await openSse(url, { "last-event-id": String(start) });
    slow.response.pause();
    const fast = await openSse(url, { "last-event-id": String(start) });
    const fastSeqs: number[] = [];

    // 400 events of about 60 kB appended to the session's subject (24 MB, more than socket buffers hold).
    const js = jetstream(stack.client.nc);
    const subject = subjects.event(partitionOf(sessionId, PARTITIONS), sessionId);
    const COUNT = 400;
    let parentId: string | null = null;
    const published: number[] = [];
    const fastDone = (async () => {
      for await (const f of fast.frames) {
        if (!f.id) continue;
        fastSeqs.push(Number(f.id));
        if (fastSeqs.length === COUNT) return;
      }
    })();
    for (let i = 0; i < COUNT; i++) {
      const id = newId();
      const encoded = encodeEvent({
        type: "custom",
        customType: "bulk",
        data: { i, pad: "x".repeat(60_000) },
        entry: { id, parentId },
        meta: { v: 1, id, sessionId, ts: Date.now(), producer: "gateway-test" },
      });
      if (!encoded.ok) throw new Error(encoded.error);
      published.push((await js.publish(subject, encoded.bytes, { msgID: id })).seq);
      parentId = id;
    }
    const publishedAt = Date.now();
    await fastDone;
    expect(Date.now() - publishedAt).toBeLessThan(5_000);
    expect(fastSeqs).toEqual(published);
    fast.close();

    // The slow client was dropped: what it still reads ends uncleanly, and it resumes from its last id.
    const slowFrames: SseFrame[] = [];
    slow.response.resume();
    for await (const f of slow.frames) slowFrames.push(f);
    expect(await slow.ended).toEqual({ clean: false });
    const seen = slowFrames.filter((f) => f.id).map((f) => Number(f.id));
    expect(seen.length).toBeLessThan(COUNT);
    const resumed = await openSse(`${url}?follow=false`, { "last-event-id": String(seen.at(-1) ?? start) });
    for await (const f of resumed.frames) if (f.id) seen.push(Number(f.id));
    expect(seen).toEqual(published);
    const metrics = await call(base, "GET", "/metrics");
    expect(metrics.text).toMatch(/fleet_gateway_sse_dropped_total [1-9]/);
  });
});

describe("gateway / webhooks", () => {
  it("delivers signed agent_end and command_rejected events, retrying failures, with none lost across a gateway restart", async () => {
    let secret = "";
    const receiver = await startReceiver(() => secret, 2);
    const sessionId = "s-hook-1";
    let gateway = stack.gateway;
    const registered = await call(gateway.url, "POST", "/v1/webhooks", {
      body: { url: receiver.url, events: ["agent_end", "command_rejected"], sessionId },
    });
    expect(registered.status).toBe(201);
    secret = registered.body.secret;

    // Delivered while the gateway runs (the first two attempts fail with 500 and are retried).
    await runPrompt(gateway.url, sessionId, "one");
    const rejected = await call(gateway.url, "POST", `/v1/sessions/${sessionId}/commands`, {
      body: { type: "label", targetId: "nothing", label: "x" },
    });
    expect(rejected.body.event.type).toBe("command_rejected");
    await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(2);
    expect(receiver.requests()).toBeGreaterThanOrEqual(4);

    // The gateway stops; events happen meanwhile; a new gateway instance delivers them.
    await gateway.close();
    stack.fake.script(fakeReply("answer to two"));
    await stack.client.prompt(sessionId, "two");
    const live = await stack.client.state(sessionId);
    await live.waitFor((v) => !v.agent.isStreaming && v.agent.messages.length >= 4, 30_000).finally(() => live.close());
    await stack.client.label(sessionId, "nothing-either", "y").catch(() => undefined);
    expect(receiver.received).toHaveLength(2);
    gateway = await stack.startGateway();
    const expected = await logSeqs(sessionId, ["agent_end", "command_rejected"], registered.body.startSeq);
    expect(expected).toHaveLength(4);
    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(4);
    expect(receiver.received.map((r) => r.seq)).toEqual(expected);
    expect(receiver.received.map((r) => r.type)).toEqual([
      "agent_end",
      "command_rejected",
      "agent_end",
      "command_rejected",
    ]);
    expect(receiver.received.every((r) => r.signed && r.sessionId === sessionId)).toBe(true);
    await call(gateway.url, "DELETE", `/v1/webhooks/${registered.body.id}`);
    await gateway.close();
    await receiver.close();
  });
});
