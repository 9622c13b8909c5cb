// The store's indexes (PROTOCOL change 44) through every client: HTTP (`GET /v1/approvals`,
// `GET /v1/sessions?status=running`, `?q=`, each answer checked against GET /openapi.json), the SDK
// (`listApprovals`, `listRunning`, `searchSessions`) and the CLI (`fleet approvals`,
// `fleet sessions --running`, `fleet sessions -q`), against the real stack.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSse } from "@fleet/gateway/testing";
import { connectRedis } from "@fleet/session-store";
import { fakeReply, fakeToolUse } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openApiChecker } from "./openapi-check.js";
import { call, fleetCliOf, type GatewayStack, startGatewayStack, waitIdle } from "./support.js";

let stack: GatewayStack;
let checker: ReturnType<typeof openApiChecker>;
let dir: string;

beforeAll(async () => {
  stack = await startGatewayStack({ approvalTools: ["write"] });
  checker = openApiChecker((await call(stack.gateway.url, "GET", "/openapi.json")).body);
  dir = mkdtempSync(join(tmpdir(), "fleet-index-cli-"));
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function api(method: string, path: string, body?: unknown) {
  const answer = await call(stack.gateway.url, method, path, body === undefined ? {} : { body });
  checker.check(method, path, answer.status, answer.headers.get("content-type"), answer.body);
  return answer;
}

const fleet = (args: string[]) => fleetCliOf(stack, dir)(args);

const ids = (body: { sessions: Array<{ sessionId: string }> }) => body.sessions.map((s) => s.sessionId).sort();

describe("gateway, SDK and CLI / store indexes", () => {
  it("list open runs, pending approvals and search by id, name and label; each client the same", async () => {
    stack.fake.script(
      fakeReply([fakeToolUse("write", { path: "idx.txt", content: "x\n" }, { id: "toolu_index_1" })]),
      fakeReply("Written."),
    );
    for (const [sessionId, name] of [
      ["s-idx-waiting", "Quarterly numbers"],
      ["s-idx-quiet", "Release checklist"],
    ] as const) {
      expect((await api("POST", "/v1/sessions", { sessionId })).status).toBe(201);
      await api("POST", `/v1/sessions/${sessionId}/commands`, { type: "set_name", name });
    }
    await api("POST", "/v1/sessions/s-idx-waiting/commands", { type: "prompt", text: "write it" });
    await expect
      .poll(async () => (await api("GET", "/v1/approvals")).body.approvals.length, { timeout: 15_000 })
      .toBe(1);

    // HTTP.
    const approvals = (await api("GET", "/v1/approvals")).body.approvals;
    expect(approvals[0]).toMatchObject({ sessionId: "s-idx-waiting", toolCallId: "toolu_index_1", toolName: "write" });
    expect((await api("GET", "/v1/approvals?sessionId=s-idx-quiet")).body.approvals).toEqual([]);
    expect(ids((await api("GET", "/v1/sessions?status=running")).body)).toEqual(["s-idx-waiting"]);
    expect(ids((await api("GET", "/v1/sessions?q=quarterly")).body)).toEqual(["s-idx-waiting"]);
    expect(ids((await api("GET", "/v1/sessions?q=CHECK")).body)).toEqual(["s-idx-quiet"]);
    expect(ids((await api("GET", "/v1/sessions?q=s-idx-")).body)).toEqual(["s-idx-quiet", "s-idx-waiting"]);
    expect(ids((await api("GET", "/v1/sessions?q=idx-q")).body)).toEqual(["s-idx-quiet"]);
    expect((await api("GET", "/v1/sessions?q=x&status=running")).status).toBe(400);
    const paged = await api("GET", "/v1/sessions?q=s-idx-&limit=1");
    expect(paged.body.sessions).toHaveLength(1);
    const next = await api("GET", `/v1/sessions?q=s-idx-&limit=1&cursor=${encodeURIComponent(paged.body.cursor)}`);
    expect([...ids(paged.body), ...ids(next.body)].sort()).toEqual(["s-idx-quiet", "s-idx-waiting"]);

    // SDK.
    expect((await stack.client.listApprovals()).approvals).toEqual(approvals);
    expect((await stack.client.listRunning()).sessions.map((s) => s.sessionId)).toEqual(["s-idx-waiting"]);
    expect((await stack.client.searchSessions("release")).sessions.map((s) => s.sessionId)).toEqual(["s-idx-quiet"]);

    // CLI.
    const listed = await fleet(["approvals", "--json"]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).approvals).toEqual(approvals);
    const table = await fleet(["approvals"]);
    expect(table.stdout).toMatch(/s-idx-waiting .* write {2}toolu_index_1 {2}\{"path":"idx.txt"/);
    const running = await fleet(["sessions", "--running", "--json"]);
    expect(JSON.parse(running.stdout).sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual([
      "s-idx-waiting",
    ]);
    const found = await fleet(["sessions", "-q", "quarterly"]);
    expect([found.code, found.stdout]).toEqual([0, expect.stringContaining("Quarterly numbers")]);
    expect(found.stdout).not.toContain("s-idx-quiet");
    const both = await fleet(["sessions", "--running", "-q", "x"]);
    expect([both.code, both.stderr]).toEqual([1, expect.stringContaining("cannot be combined")]);

    // Decided and ended: every index lets the session go.
    await api("POST", "/v1/sessions/s-idx-waiting/commands", {
      type: "approve_tool_call",
      toolCallId: "toolu_index_1",
    });
    await waitIdle(stack.client, "s-idx-waiting", 4);
    await expect.poll(async () => (await api("GET", "/v1/approvals")).body.approvals, { timeout: 10_000 }).toEqual([]);
    await expect
      .poll(async () => ids((await api("GET", "/v1/sessions?status=running")).body), { timeout: 10_000 })
      .toEqual([]);
  });

  it("the change feed names a session once the store's indexes hold its change, not when it is appended", async () => {
    expect((await api("POST", "/v1/sessions", { sessionId: "s-idx-feed" })).status).toBe(201);
    // Settled first: the index holds every event of the session's log, so no write of the session
    // is still on its way to Redis, and no notice of one, when the feed opens and the writes pause.
    await expect
      .poll(
        async () => {
          const indexed = (await api("GET", "/v1/sessions?q=s-idx-feed")).body.sessions as Array<{ seq: number }>;
          const logged = (await api("GET", "/v1/sessions/s-idx-feed")).body as { seq: number };
          return indexed.length === 1 && indexed[0]?.seq === logged.seq;
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    await new Promise((r) => setTimeout(r, 200));
    const feed = await openSse(`${stack.gateway.url}/v1/changes`);
    expect(feed.status).toBe(200);
    // Each frame that names the session, stamped when it arrives (not when the test gets to it).
    const named: number[] = [];
    let heard: (() => void) | undefined;
    const collecting = (async () => {
      for await (const f of feed.frames) {
        if (f.event !== "changes") continue;
        const batch = JSON.parse(f.data ?? "{}") as { sessions: string[]; approvals: boolean };
        if (!batch.sessions.includes("s-idx-feed")) continue;
        named.push(Date.now());
        heard?.();
      }
    })();
    const redis = connectRedis(stack.redis.url);
    try {
      // The store's writes wait (a lagging store); its reads, and so the queries, do not.
      const PAUSE_MS = 2_000;
      const pausedAt = Date.now();
      await redis.call("CLIENT", "PAUSE", String(PAUSE_MS), "WRITE");
      await api("POST", "/v1/sessions/s-idx-feed/commands", { type: "set_name", name: "Lagging index" });
      let found: string[] = [];
      const deadline = Date.now() + 15_000;
      for (let reloaded = 0; found.length === 0 && Date.now() < deadline; ) {
        if (reloaded === named.length) {
          await new Promise<void>((r) => {
            heard = r;
            setTimeout(r, 500);
          });
          continue;
        }
        reloaded = named.length;
        // What a view does on the frame: reload from the index. The store may have taken the
        // command's acceptance into a batch before its name event was appended: that batch's frame
        // names the session too, and the next one (the name's batch) makes the reload find it.
        found = ids((await api("GET", "/v1/sessions?q=lagging")).body);
      }
      expect(found).toEqual(["s-idx-feed"]);
      // No frame named the session while the store could not write it.
      expect((named[0] ?? 0) - pausedAt).toBeGreaterThanOrEqual(PAUSE_MS);
    } finally {
      feed.close();
      await collecting;
      await redis.call("CLIENT", "UNPAUSE").catch(() => undefined);
      redis.disconnect();
    }
  });
});
