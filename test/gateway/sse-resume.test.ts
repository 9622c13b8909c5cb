// SSE through the real gateway and stack: resume after a disconnect with Last-Event-ID, `?after=`,
// `follow=false`, keep-alive comments, and the fold of the streamed events equals GET /v1/sessions/{id}.
import { connect } from "node:net";
import { emptySessionView, foldSessionViewEvents } from "@fleet/client";
import { sessionStateOf } from "@fleet/gateway";
import { openSse, type SseFrame } from "@fleet/gateway/testing";
import {
  type FleetEvent,
  FleetEvent as FleetEventSchema,
  foldSessionSpend,
  initialSessionSpend,
} from "@fleet/protocol";
import { fakeReply, fakeText, fakeToolUse } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type GatewayStack, startGatewayStack } from "./support.js";

let stack: GatewayStack;
let base: string;

beforeAll(async () => {
  stack = await startGatewayStack({ gateway: { keepaliveMs: 300 } });
  base = stack.gateway.url;
}, 60_000);
afterAll(async () => {
  await stack?.stop();
});

const eventsOf = (frames: SseFrame[]) =>
  frames
    .filter((f) => f.id !== undefined)
    .map((f) => ({ seq: Number(f.id), type: f.event, event: FleetEventSchema.parse(JSON.parse(f.data as string)) }));

/** Reads frames until `stop(frame)` holds (inclusive), then closes the stream. */
async function readUntil(url: string, headers: Record<string, string>, stop: (f: SseFrame) => boolean) {
  const sse = await openSse(url, headers);
  expect(sse.status).toBe(200);
  const frames: SseFrame[] = [];
  for await (const frame of sse.frames) {
    frames.push(frame);
    if (stop(frame)) break;
  }
  sse.close();
  return frames;
}

describe("gateway / SSE events", () => {
  it("a client that drops mid-run resumes with Last-Event-ID and gets exactly the missed events; its fold equals GET", async () => {
    const sessionId = "s-gw-resume";
    stack.fake.script(
      fakeReply(
        [fakeText("I will write the file now, slowly."), fakeToolUse("write", { path: "a.txt", content: "x\n" })],
        {
          eventDelayMs: 15,
        },
      ),
      fakeReply("The file is written. Anything else you would like me to do today?", { eventDelayMs: 15 }),
    );
    const created = await call(base, "POST", "/v1/sessions", { body: { sessionId } });
    expect(created.status).toBe(201);
    const url = `${base}/v1/sessions/${sessionId}/events`;
    // The first connection reads until the first streamed delta of the run, then goes away.
    const first = openSse(url);
    const prompt = call(base, "POST", `/v1/sessions/${sessionId}/commands`, { body: { type: "prompt", text: "go" } });
    const firstFrames: SseFrame[] = [];
    const sse = await first;
    for await (const frame of sse.frames) {
      firstFrames.push(frame);
      if (frame.event === "message_update") break;
    }
    sse.close();
    expect((await prompt).body.event.type).toBe("command_accepted");
    const lastId = firstFrames.filter((f) => f.id).at(-1)?.id as string;
    // Read mid-run: the final read below folds only the events after this one onto it (view cache).
    const midRun = await call(base, "GET", `/v1/sessions/${sessionId}`);
    expect(midRun.body.seq).toBeGreaterThanOrEqual(Number(lastId));

    // While it is away the run goes on; it comes back after agent_end with the last id it saw.
    await stack.client
      .state(sessionId)
      .then((live) =>
        live.waitFor((v) => v.agent.messages.length >= 4 && !v.agent.isStreaming, 30_000).finally(() => live.close()),
      );
    const resumed = await readUntil(url, { "last-event-id": lastId }, (f) => f.event === "agent_end");

    const all = eventsOf([...firstFrames, ...resumed]);
    const seqs = all.map((e) => e.seq);
    const log = await stack.client.replay(sessionId);
    const expected: number[] = [];
    for await (const item of stack.client.events(sessionId, { signal: AbortSignal.timeout(5_000) })) {
      expected.push(item.seq);
      if (item.seq >= log.seq) break;
    }
    expect(seqs).toEqual(expected); // no gap, no duplicate, stream order
    expect(eventsOf(resumed)[0]?.seq).toBeGreaterThan(Number(lastId));
    expect(all.every((e) => e.type === e.event.type)).toBe(true);

    const folded = all.map((e) => ({ seq: e.seq, event: e.event as FleetEvent }));
    const fold = foldSessionViewEvents(emptySessionView(), folded);
    const spend = initialSessionSpend();
    for (const { event } of folded) foldSessionSpend(spend, event);
    const got = await call(base, "GET", `/v1/sessions/${sessionId}`);
    expect(got.status).toBe(200);
    expect(JSON.parse(JSON.stringify(sessionStateOf(sessionId, fold, spend)))).toEqual(got.body);
    expect(got.body.spend.session.outputTokens).toBeGreaterThan(0);
    expect(got.body).toMatchObject({ status: "idle", seq: log.seq });
    expect(got.body.messages.map((m: { role: string }) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
    ]);
  });

  it("?after= starts after a sequence, follow=false ends at the current end, and Last-Event-ID wins over ?after=", async () => {
    const sessionId = "s-gw-after";
    stack.fake.script(fakeReply("short answer"));
    await call(base, "POST", `/v1/sessions/${sessionId}/commands`, { body: { type: "prompt", text: "hi" } });
    const live = await stack.client.state(sessionId);
    await live.waitFor((v) => v.agent.messages.length === 2 && !v.agent.isStreaming);
    live.close();
    const end = await stack.client.lastSeq(sessionId);

    const whole = await openSse(`${base}/v1/sessions/${sessionId}/events?follow=false`);
    const wholeFrames: SseFrame[] = [];
    for await (const f of whole.frames) wholeFrames.push(f);
    expect(await whole.ended).toEqual({ clean: true });
    const ids = eventsOf(wholeFrames).map((e) => e.seq);
    expect(ids.at(-1)).toBe(end);

    const middle = ids[3] as number;
    const after = await openSse(`${base}/v1/sessions/${sessionId}/events?follow=false&after=${middle}`);
    const afterFrames: SseFrame[] = [];
    for await (const f of after.frames) afterFrames.push(f);
    expect(eventsOf(afterFrames).map((e) => e.seq)).toEqual(ids.slice(4));

    const header = await openSse(`${base}/v1/sessions/${sessionId}/events?follow=false&after=${middle}`, {
      "last-event-id": String(ids[5]),
    });
    const headerFrames: SseFrame[] = [];
    for await (const f of header.frames) headerFrames.push(f);
    expect(eventsOf(headerFrames).map((e) => e.seq)).toEqual(ids.slice(6));
  });

  it("frames an HTTP/1.1 body as chunks and an HTTP/1.0 body as it is, ended by closing", async () => {
    const sessionId = "s-gw-http10";
    await call(base, "POST", "/v1/sessions", { body: { sessionId } });
    const end = await createdAt(sessionId);
    const { hostname, port } = new URL(base);
    const raw = (version: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ host: hostname, port: Number(port) }, () =>
          socket.write(
            `GET /v1/sessions/${sessionId}/events?follow=false HTTP/${version}\r\nhost: ${hostname}\r\n\r\n`,
          ),
        );
        let text = "";
        socket.on("data", (chunk) => {
          text += chunk.toString("utf8");
          // HTTP/1.1 keeps the connection open after the last chunk.
          if (version === "1.1" && text.endsWith("\r\n0\r\n\r\n")) socket.end();
        });
        socket.on("end", () => resolve(text));
        socket.on("error", reject);
      });
    const idsOf = (body: string) => [...body.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));

    const v10 = await raw("1.0");
    const [head10 = "", body10 = ""] = v10.split("\r\n\r\n", 2);
    expect(head10).toMatch(/^HTTP\/1\.1 200/);
    expect(head10.toLowerCase()).not.toContain("transfer-encoding");
    expect(body10).toMatch(/^id: \d+\nevent: owner_change\ndata: \{/);
    expect(idsOf(body10).at(-1)).toBe(end);

    const v11 = await raw("1.1");
    const [head11 = "", body11 = ""] = v11.split("\r\n\r\n", 2);
    expect(head11.toLowerCase()).toContain("transfer-encoding: chunked");
    // Every frame is one chunk: `<size>\r\n<frame>\r\n`, then the last chunk.
    expect(body11).toMatch(/^[0-9a-f]+\r\nid: \d+\nevent: owner_change\ndata: \{/);
    expect(idsOf(body11)).toEqual(idsOf(body10));
  });

  it("sends a `:` comment while nothing happens, and follows new events live", async () => {
    const sessionId = "s-gw-keepalive";
    await call(base, "POST", "/v1/sessions", { body: { sessionId } });
    const end = await createdAt(sessionId);
    const sse = await openSse(`${base}/v1/sessions/${sessionId}/events`, { "last-event-id": String(end) });
    const frames: SseFrame[] = [];
    const named = (async () => {
      for await (const f of sse.frames) {
        frames.push(f);
        if (f.event === "session_info") return;
      }
    })();
    await expect.poll(() => frames.some((f) => f.comment === "keepalive"), { timeout: 5_000 }).toBe(true);
    const renamed = await call(base, "POST", `/v1/sessions/${sessionId}/commands`, {
      body: { type: "set_name", name: "kept alive" },
    });
    expect(renamed.body.event.type).toBe("command_accepted");
    await named;
    sse.close();
    expect(eventsOf(frames).map((e) => e.type)).toEqual(["command_accepted", "session_info"]);
  });
});

/** The sequence of a session's `session_created`: a create answers at its command_accepted, before it. */
async function createdAt(sessionId: string): Promise<number> {
  for await (const { seq, event } of stack.client.events(sessionId)) if (event.type === "session_created") return seq;
  throw new Error(`no session_created in ${sessionId}`);
}
