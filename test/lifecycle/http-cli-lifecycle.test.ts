// Session lifecycle over HTTP (DELETE /v1/sessions/{id}, POST /v1/sessions/{id}/archive,
// POST /v1/sessions {restoreFrom}; each answer checked against GET /openapi.json) and through the
// CLI (`fleet rm`, `fleet archive`, `fleet restore`), against the real stack.
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tokenTable } from "@fleet/gateway";
import { utcDayOf } from "@fleet/protocol";
import { fakeReply, fakeText } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openApiChecker } from "../gateway/openapi-check.js";
import { call, fleetCliOf, type GatewayStack, startGatewayStack, waitIdle } from "../gateway/support.js";
import { archivedEvents, isHistoryThenOwnerChanges, startEndlessRun, storedEvents } from "./support.js";

const OPERATE = "operate-token-lifecycle-0123";
const READ = "read-token-lifecycle-0123456";
const tokenId = createHash("sha256").update(OPERATE).digest("hex").slice(0, 12);

let stack: GatewayStack;
let checker: ReturnType<typeof openApiChecker>;
let dir: string;

beforeAll(async () => {
  stack = await startGatewayStack({
    gateway: {
      tokens: tokenTable({
        tokens: [
          { token: OPERATE, tenant: "acme", role: "operate" },
          { token: READ, tenant: "acme", role: "read" },
        ],
        tenants: {},
      }),
      // The stack's server has no accounts: tenant acme's identity is the gateway's own (anonymous) login.
      tenant: "acme",
    },
  });
  checker = openApiChecker((await call(stack.gateway.url, "GET", "/openapi.json")).body);
  dir = mkdtempSync(join(tmpdir(), "fleet-lifecycle-cli-"));
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type CallOptions = Parameters<typeof call>[3];
async function api(method: string, path: string, opts: CallOptions = {}) {
  const answer = await call(stack.gateway.url, method, path, { token: OPERATE, ...opts });
  checker.check(method, path, answer.status, answer.headers.get("content-type"), answer.body);
  return answer;
}

const fleet = (args: string[]) => fleetCliOf(stack, dir)(args);

/** A session with one answered prompt, sent over HTTP. */
/** A prompt answered: waits for this run's two messages (not those of an earlier run) and its end. */
async function answered(sessionId: string, text = "hello") {
  const before = (await stack.client.replay(sessionId)).agent.messages.length;
  stack.fake.script(fakeReply([fakeText(`answer to ${text}`)]));
  const sent = await api("POST", `/v1/sessions/${sessionId}/commands`, { body: { type: "prompt", text } });
  expect(sent.body.event.type).toBe("command_accepted");
  await waitIdle(stack.client, sessionId, before + 2);
}

describe("session lifecycle / HTTP", () => {
  it("DELETE refuses an open run (409 busy), then deletes; 404 after, and for unknown sessions", async () => {
    const sid = "lc-http-del";
    await answered(sid, "first");
    await startEndlessRun(stack, sid, () =>
      api("POST", `/v1/sessions/${sid}/commands`, { body: { type: "prompt", text: "go" } }),
    );
    const busy = await api("DELETE", `/v1/sessions/${sid}`);
    expect([busy.status, busy.body.error.code]).toEqual([409, "busy"]);
    expect(busy.body.error.message).toMatch(/abort it first/);
    await api("POST", `/v1/sessions/${sid}/commands`, { body: { type: "abort" } });
    await waitIdle(stack.client, sid, 4);

    const readOnly = await api("DELETE", `/v1/sessions/${sid}`, { token: READ });
    expect(readOnly.status).toBe(403);
    const deleted = await api("DELETE", `/v1/sessions/${sid}?commandId=del-http-1`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({
      sessionId: sid,
      commandId: "del-http-1",
      record: { type: "session_deleted", by: `gateway acme/operate token ${tokenId}` },
    });
    expect((await api("GET", `/v1/sessions/${sid}`)).status).toBe(404);
    // The same command again answers with its record; another delete finds nothing.
    const again = await api("DELETE", `/v1/sessions/${sid}?commandId=del-http-1`);
    expect([again.status, again.body.record]).toEqual([200, deleted.body.record]);
    const gone = await api("DELETE", `/v1/sessions/${sid}`);
    expect([gone.status, gone.body.error.code]).toEqual([404, "not_found"]);
    const unknown = await api("DELETE", "/v1/sessions/lc-http-never");
    expect(unknown.status).toBe(404);
    const budget = await api("GET", `/v1/budget?day=${utcDayOf(Date.now())}`);
    expect(budget.body.deleted.totalTokens).toBeGreaterThan(0);
  });

  it("archive, then POST /v1/sessions {restoreFrom} brings the session back with its history", async () => {
    const sid = "lc-http-arc";
    await answered(sid, "first");
    await answered(sid, "second");
    const before = await api("GET", `/v1/sessions/${sid}`);
    const history = await storedEvents(stack.client, sid);

    const archived = await api("POST", `/v1/sessions/${sid}/archive`);
    expect(archived.status).toBe(200);
    const kept = (await archivedEvents(stack.client, sid)).events;
    expect(isHistoryThenOwnerChanges(kept, history)).toBe(true);
    expect(archived.body.record).toMatchObject({ type: "session_archived", events: kept.length });
    expect(archived.body.record.archive.store).toBe("object_store");
    expect((await api("GET", `/v1/sessions/${sid}`)).status).toBe(404);
    expect(
      (await api("GET", "/v1/sessions?limit=1000")).body.sessions.map((s: { sessionId: string }) => s.sessionId),
    ).not.toContain(sid);

    const wrong = await api("POST", "/v1/sessions", { body: { restoreFrom: sid, sessionId: "other" } });
    expect([wrong.status, wrong.body.error.code]).toEqual([400, "invalid"]);
    const withConfig = await api("POST", "/v1/sessions", { body: { restoreFrom: sid, config: { systemPrompt: "x" } } });
    expect(withConfig.status).toBe(400);
    const missing = await api("POST", "/v1/sessions", { body: { restoreFrom: "lc-http-no-archive" } });
    expect([missing.status, missing.body.error.code]).toEqual([404, "not_found"]);

    const restored = await api("POST", "/v1/sessions", { body: { restoreFrom: sid } });
    expect(restored.status).toBe(201);
    expect(restored.body).toMatchObject({
      sessionId: sid,
      record: { type: "session_restored", events: kept.length },
    });
    const after = await api("GET", `/v1/sessions/${sid}`);
    expect(after.status).toBe(200);
    expect(after.body.messages).toEqual(before.body.messages);
    expect(after.body.spend.session).toEqual(before.body.spend.session);
    const exists = await api("POST", "/v1/sessions", { body: { restoreFrom: sid } });
    expect([exists.status, exists.body.error.code]).toEqual([409, "conflict"]);
  });
});

describe("session lifecycle / CLI", () => {
  it("fleet archive, fleet restore and fleet rm print the lifecycle record; errors are one line", async () => {
    const sid = "lc-cli-1";
    await answered(sid, "from the cli");
    const history = await storedEvents(stack.client, sid);

    const archived = await fleet(["archive", sid, "--by", "cli-test"]);
    expect([archived.code, archived.stderr]).toEqual([0, ""]);
    const kept = (await archivedEvents(stack.client, sid)).events;
    expect(isHistoryThenOwnerChanges(kept, history)).toBe(true);
    expect(archived.stdout).toMatch(
      new RegExp(`^✓ ${sid} archived: ${kept.length} events \\(fleet_archive/sessions/${sid}/events\\.jsonl\\)\\n$`),
    );
    expect(await stack.client.lastSeq(sid)).toBe(0);

    const restored = await fleet(["restore", sid, "--json"]);
    expect(restored.code).toBe(0);
    expect(JSON.parse(restored.stdout)).toMatchObject({
      type: "session_restored",
      sessionId: sid,
      events: kept.length,
    });
    expect((await storedEvents(stack.client, sid)).filter((e) => e.type === "session_created")).toHaveLength(1);

    const removed = await fleet(["rm", sid]);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toMatch(new RegExp(`^✓ ${sid} deleted: \\d+ events\\n$`));
    expect((await stack.client.lifecycleRecord(sid))?.type).toBe("session_deleted");

    const again = await fleet(["rm", sid]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`fleet: delete_session rejected (not_found): Session ${sid} not found\n`);
    const noArchive = await fleet(["restore", sid]);
    expect(noArchive.code).toBe(1);
    expect(noArchive.stderr).toBe(`fleet: restore_session rejected (not_found): No archive of session ${sid}\n`);
    // Five CLI processes, each starting from the TypeScript sources: minutes on a loaded machine.
  }, 240_000);
});
