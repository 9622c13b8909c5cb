// Inputs larger than a NATS message: a 20 MB pi JSONL import through the SDK, the CLI and HTTP
// (each exported back and compared), a prompt with a 3 MB image and a 200 KB text that reaches the
// LLM whole while the log keeps references, and the 32 MiB body limit. Real nats-server,
// redis-server, store, loop, runner, gateway.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  blobRefsIn,
  bytesToBase64,
  exportPiJsonl,
  importPiJsonl,
  MAX_MESSAGE_BYTES,
  OBJECT_STORES,
  type SessionEntry,
} from "@fleet/protocol";
import { fakeReply } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../client/support/run-cli.js";
import { call, type GatewayStack, startGatewayStack } from "./support.js";

const MB = 1024 * 1024;
const BODY_LIMIT = 32 * MB;
let stack: GatewayStack;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fleet-large-inputs-"));
  stack = await startGatewayStack({
    gateway: { bodyLimitBytes: BODY_LIMIT, commandTimeoutMs: 90_000 },
  });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Deterministic filler of `n` characters (not compressible into nothing, not random). */
const filler = (seed: number, n: number) => {
  const words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"];
  let out = "";
  for (let i = 0; out.length < n; i++) out += `${words[(seed + i * 7) % words.length]}${(seed * 31 + i) % 997} `;
  return out.slice(0, n);
};

const imageBytes = (n: number, seed: number) => new Uint8Array(n).map((_, i) => (i * 131 + seed) % 256);

/**
 * A pi v3 session file of about `bytes`: user and assistant turns of 8 kB texts, and every 100th
 * user turn with a 120 kB text and a 150 kB image (blocks that go by reference).
 */
function piSessionFile(bytes: number): { text: string; entries: SessionEntry[] } {
  const entries: SessionEntry[] = [];
  let parentId: string | null = null;
  let size = 0;
  const usage = {
    input: 10,
    output: 10,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 20,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
  for (let i = 0; size < bytes; i++) {
    const id = `e${String(i).padStart(6, "0")}`;
    const timestamp = 1_760_000_000_000 + i * 1000;
    const big = i % 200 === 0;
    const message =
      i % 2 === 0
        ? {
            role: "user" as const,
            timestamp,
            content: big
              ? [
                  { type: "text" as const, text: filler(i, 120_000) },
                  { type: "image" as const, data: bytesToBase64(imageBytes(150_000, i)), mimeType: "image/png" },
                ]
              : [{ type: "text" as const, text: filler(i, 8_000) }],
          }
        : {
            role: "assistant" as const,
            timestamp,
            content: [{ type: "text" as const, text: filler(i, 8_000) }],
            api: "anthropic-messages",
            provider: "anthropic",
            model: "claude-sonnet-5",
            usage,
            stopReason: "stop" as const,
          };
    const entry = { type: "message", id, parentId, timestamp, message } as SessionEntry;
    entries.push(entry);
    parentId = id;
    size += JSON.stringify(entry).length;
  }
  const text = exportPiJsonl({ sessionId: "pi-src", createdAt: 1_760_000_000_000, entries, leafId: parentId });
  return { text, entries };
}

/** The messages of a pi file, in order (what an import must keep). */
const messagesOf = (jsonl: string) => {
  const parsed = importPiJsonl(jsonl);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.entries.map((e) => (e.type === "message" ? e.message : e.type));
};

/** `[count, index of the first message that differs (-1: none)]`, a short answer for a 20 MB compare. */
const compareMessages = (jsonl: string, expected: unknown[]) => {
  const got = messagesOf(jsonl);
  const first = expected.findIndex((m, i) => JSON.stringify(m) !== JSON.stringify(got[i]));
  return [got.length, first];
};

let file: { text: string; entries: SessionEntry[] };

/**
 * Waits until the imported session's log holds every entry (an import's outcome comes first, its
 * entries after it) and the store has projected them; the session's replay.
 */
async function awaitImported(sessionId: string) {
  await expect
    .poll(async () => (await stack.client.replay(sessionId)).tree.entries.length, { timeout: 90_000, interval: 2_000 })
    .toBe(file.entries.length);
  const view = await stack.client.replay(sessionId);
  await stack.client.getTree(sessionId, { minSeq: view.seq });
  return view;
}
const fileMessages = () => messagesOf(file.text);

describe("gateway / large inputs", () => {
  beforeAll(() => {
    file = piSessionFile(20 * 1_000_000);
    writeFileSync(join(dir, "big.jsonl"), file.text);
  });

  it("imports a 20 MB pi session through the SDK and exports it back the same", async () => {
    expect(Buffer.byteLength(file.text)).toBeGreaterThan(20_000_000);
    const parsed = importPiJsonl(file.text);
    if (!parsed.ok) throw new Error(parsed.error);
    const started = Date.now();
    const imported = await stack.client.importSession(
      { entries: parsed.entries, leafId: parsed.leafId },
      { sessionId: "s-big-sdk", timeoutMs: 90_000 },
    );
    console.log(`SDK import of ${Buffer.byteLength(file.text)} bytes: ${Date.now() - started} ms`);
    expect(imported.sessionId).toBe("s-big-sdk");
    const view = await awaitImported("s-big-sdk");
    // The log keeps references to fleet_blobs, every event within one message.
    let largest = 0;
    const refs: string[] = [];
    for await (const item of stack.client.eventRecords("s-big-sdk", { from: 1 })) {
      largest = Math.max(largest, item.data.byteLength);
      refs.push(...blobRefsIn(item.event).map((r) => `${r.bucket}/${r.name}`));
      if (item.seq >= view.seq) break;
    }
    expect(largest).toBeLessThan(MAX_MESSAGE_BYTES);
    const bigTurns = file.entries.filter((_, i) => i % 200 === 0).length;
    expect(refs).toHaveLength(2 * bigTurns);
    expect(refs.every((r) => r.startsWith(`${OBJECT_STORES.blobs.name}/input/s-big-sdk/`))).toBe(true);
    // The store exports it (a reply over max_payload, by reference) with the content resolved.
    const exported = await stack.client.export("s-big-sdk");
    expect(Buffer.byteLength(exported)).toBeGreaterThan(20_000_000);
    expect(compareMessages(exported, fileMessages())).toEqual([file.entries.length, -1]);
  }, 180_000);

  it("imports it through the CLI (fleet import)", async () => {
    const result = await runCli(["import", join(dir, "big.jsonl"), "-s", "s-big-cli"], {
      cwd: dir,
      env: { FLEET_HOME: join(dir, ".fleet"), NATS_URL: stack.nats.url },
      timeoutMs: 120_000,
    });
    expect([result.code, result.stderr, result.stdout]).toEqual([0, "", "s-big-cli\n"]);
    await awaitImported("s-big-cli");
    expect(compareMessages(await stack.client.export("s-big-cli"), fileMessages())).toEqual([file.entries.length, -1]);
  }, 180_000);

  it("imports it through HTTP and exports it back; a body over 32 MiB is 413 with the JSON error", async () => {
    const base = stack.gateway.url;
    const started = Date.now();
    const imported = await call(base, "POST", "/v1/sessions/import?sessionId=s-big-http", { text: file.text });
    console.log(`HTTP import of ${Buffer.byteLength(file.text)} bytes: ${Date.now() - started} ms`);
    expect([imported.status, imported.body?.sessionId, imported.body?.error]).toEqual([201, "s-big-http", undefined]);
    await awaitImported("s-big-http");
    const exported = await call(base, "GET", "/v1/sessions/s-big-http/export");
    expect(exported.status).toBe(200);
    expect(compareMessages(exported.text, fileMessages())).toEqual([file.entries.length, -1]);

    const over = await call(base, "POST", "/v1/sessions/import", { text: "x".repeat(BODY_LIMIT + 1) });
    expect([over.status, over.headers.get("content-type"), over.body]).toEqual([
      413,
      "application/json; charset=utf-8",
      { error: { code: "too_large", message: `the body is over the limit of ${BODY_LIMIT} bytes` } },
    ]);
  }, 180_000);

  it("sends a 3 MB image and a 200 kB text to the LLM whole, while the log holds references", async () => {
    const base = stack.gateway.url;
    const image = imageBytes(3 * MB, 7);
    const text = filler(3, 200_000);
    stack.fake.script(fakeReply("I see it"));
    const before = stack.fake.requests.length;
    const sent = await call(base, "POST", "/v1/sessions/s-image/commands", {
      body: { type: "prompt", text, images: [{ type: "image", data: bytesToBase64(image), mimeType: "image/png" }] },
    });
    expect([sent.status, sent.body.event.type]).toEqual([200, "command_accepted"]);
    const live = await stack.client.state("s-image");
    await live.waitFor((v) => !v.agent.isStreaming && v.agent.messages.at(-1)?.role === "assistant", 30_000);
    live.close();

    // The model got the whole text and image.
    const request = stack.fake.requests[before]?.rawBody as {
      messages: Array<{ content: Array<{ type: string; text?: string; source?: { data: string } }> }>;
    };
    const content = request.messages[0]?.content ?? [];
    expect(content.find((c) => c.type === "text")?.text).toBe(text);
    expect(content.find((c) => c.type === "image")?.source?.data).toBe(bytesToBase64(image));

    // Every event of the session fits a message; the user message holds two references.
    const view = await stack.client.replay("s-image");
    const user = view.agent.messages[0] as { content: Array<{ type: string; blob?: { name: string; size: number } }> };
    expect(user.content.map((c) => [c.type, c.blob?.size])).toEqual([
      ["text", 200_000],
      ["image", 3 * MB],
    ]);
    for await (const item of stack.client.eventRecords("s-image", { from: 1 })) {
      expect(item.data.byteLength).toBeLessThan(64 * 1024);
      if (item.seq >= view.seq) break;
    }
    // Readers resolve them: the SDK, and the gateway's blob route.
    const resolved = await stack.client.resolveBlobs(view.agent.messages[0]);
    expect(resolved).toMatchObject({
      content: [
        { type: "text", text },
        { type: "image", data: bytesToBase64(image) },
      ],
    });
    expect(JSON.stringify(resolved)).not.toContain('"blob"');
    const name = user.content[1]?.blob?.name as string;
    const blob = await fetch(`${base}/v1/sessions/s-image/blob?name=${encodeURIComponent(name)}`);
    expect([blob.status, blob.headers.get("content-type")]).toEqual([200, "application/octet-stream"]);
    expect(Buffer.from(await blob.arrayBuffer()).equals(Buffer.from(image))).toBe(true);
    const foreign = await call(base, "GET", `/v1/sessions/s-other/blob?name=${encodeURIComponent(name)}`);
    expect(foreign.status).toBe(404);

    // A field that does not go by reference (custom data) must fit in one event: refused, not appended.
    const custom = await call(base, "POST", "/v1/sessions/s-image/commands", {
      body: { type: "append_custom", customType: "big", data: { text: "x".repeat(2 * MB) } },
    });
    expect(custom.body.event).toMatchObject({
      type: "command_rejected",
      code: "invalid",
      reason: expect.stringMatching(/^its custom event would be \d+ bytes; an event may be at most 1032192/),
    });
    // The session goes on.
    stack.fake.script(fakeReply("still here"));
    const next = await call(base, "POST", "/v1/sessions/s-image/commands", { body: { type: "prompt", text: "again" } });
    expect(next.body.event.type).toBe("command_accepted");
  }, 120_000);
});
