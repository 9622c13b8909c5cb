// Every route of the gateway end to end against the real stack, each answer checked against
// GET /openapi.json, and every error code: 400, 401, 403, 404, 409, 413, 503.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tokenTable } from "@fleet/gateway";
import { openSse } from "@fleet/gateway/testing";
import { utcDayOf } from "@fleet/protocol";
import { fakeReply, fakeText, fakeToolUse } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openApiChecker } from "./openapi-check.js";
import { acmeTokens, call, type GatewayStack, startGatewayStack, waitIdle } from "./support.js";

const OPERATE = "operate-token-0123456789";
const READ = "read-token-0123456789abc";
const tokens = acmeTokens(OPERATE, READ);

let stack: GatewayStack;
/** A stand-in build of the web console (the browser tests use the real one). */
const consoleDir = mkdtempSync(join(tmpdir(), "fleet-console-"));
let checker: ReturnType<typeof openApiChecker>;

beforeAll(async () => {
  mkdirSync(join(consoleDir, "assets"), { recursive: true });
  writeFileSync(join(consoleDir, "index.html"), '<div id="app"></div><script src="/assets/app-1.js"></script>');
  writeFileSync(join(consoleDir, "assets/app-1.js"), "console.log(1)");
  stack = await startGatewayStack({
    // The stack's server has no accounts: tenant acme's identity is the gateway's own (anonymous) login.
    gateway: { tokens, tenant: "acme", bodyLimitBytes: 64 * 1024, consoleDir },
    approvalTools: ["write"],
  });
  const doc = await call(stack.gateway.url, "GET", "/openapi.json");
  checker = openApiChecker(doc.body);
  checker.check("GET", "/openapi.json", doc.status, doc.headers.get("content-type"), doc.body);
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  rmSync(consoleDir, { recursive: true, force: true });
});

type CallOptions = Parameters<typeof call>[3];
/** A request with the operate token (unless `token` is given), its answer checked against the document. */
async function api(method: string, path: string, opts: CallOptions = {}) {
  const answer = await call(stack.gateway.url, method, path, { token: OPERATE, ...opts });
  checker.check(method, path, answer.status, answer.headers.get("content-type"), answer.body);
  return answer;
}

const idle = (sessionId: string, messages: number) => waitIdle(stack.client, sessionId, messages);

describe("gateway / API", () => {
  it("ops routes answer without a token", async () => {
    expect((await api("GET", "/healthz", { token: "" })).text).toBe("ok\n");
    expect((await api("GET", "/readyz", { token: "" })).status).toBe(200);
    const metrics = await api("GET", "/metrics", { token: "" });
    expect(metrics.text).toContain("fleet_gateway_sse_clients");
  });

  it("401 without a token or with an unknown one; 403 for the read role on an operate route", async () => {
    const missing = await api("GET", "/v1/sessions", { token: "" });
    expect([missing.status, missing.body.error.code]).toEqual([401, "unauthorized"]);
    const unknown = await api("GET", "/v1/sessions", { token: "not-a-known-token-at-all" });
    expect([unknown.status, unknown.body.error.code]).toEqual([401, "unauthorized"]);
    const readOnly = await api("POST", "/v1/sessions", { token: READ, body: {} });
    expect([readOnly.status, readOnly.body.error.code]).toEqual([403, "forbidden"]);
    expect((await api("GET", "/v1/sessions", { token: READ })).status).toBe(200);
  });

  it("refuses to start when a token names a tenant with no NATS identity, or an unreadable one", async () => {
    const withBeta = tokenTable({
      tokens: [...[OPERATE, READ].map((token) => ({ token, tenant: "acme", role: "read" as const }))],
      tenants: {},
    });
    const beta = tokenTable({ tokens: [{ token: OPERATE, tenant: "beta", role: "read" }], tenants: {} });
    await expect(stack.startGateway({ tokens: beta, tenant: "acme" })).rejects.toThrow(
      /tokens name tenant beta with no NATS identity of its own.*FLEET_TENANT is acme/,
    );
    await expect(stack.startGateway({ tokens: withBeta, tenant: undefined })).rejects.toThrow(
      /tenant acme with no NATS identity/,
    );
    const unreadable = tokenTable({
      tokens: [{ token: OPERATE, tenant: "beta", role: "read" }],
      tenants: { beta: { natsCreds: "/nonexistent/fleet-test/beta.creds" } },
    });
    await expect(stack.startGateway({ tokens: unreadable })).rejects.toThrow(
      "tenant beta: tenants.beta.natsCreds: cannot read /nonexistent/fleet-test/beta.creds (ENOENT)",
    );
  });

  it("creates a session (201), refuses the same id (409) and malformed bodies (400)", async () => {
    const created = await api("POST", "/v1/sessions", {
      body: { sessionId: "s-api-1", config: { thinkingLevel: "low" } },
    });
    expect(created.status).toBe(201);
    expect(created.body.sessionId).toBe("s-api-1");
    const again = await api("POST", "/v1/sessions", { body: { sessionId: "s-api-1" } });
    expect([again.status, again.body.error.code]).toEqual([409, "conflict"]);
    const unknownField = await api("POST", "/v1/sessions", { body: { sessionid: "typo" } });
    expect([unknownField.status, unknownField.body.error.code]).toEqual([400, "invalid"]);
    const badJson = await api("POST", "/v1/sessions", { text: "{not json", contentType: "application/json" });
    expect([badJson.status, badJson.body.error.code]).toEqual([400, "invalid"]);
    const fresh = await api("POST", "/v1/sessions", {});
    expect(fresh.status).toBe(201);
    expect(fresh.body.sessionId).toMatch(/^s-/);
  });

  it("commands: 200 with the outcome event, a repeated commandId answers the same outcome, 202 on timeout", async () => {
    stack.fake.script(fakeReply("Hello from the fake model."));
    const path = "/v1/sessions/s-api-1/commands";
    const accepted = await api("POST", path, { body: { type: "prompt", text: "hello", commandId: "cmd-api-1" } });
    expect(accepted.status).toBe(200);
    expect(accepted.body.event).toMatchObject({
      type: "command_accepted",
      commandId: "cmd-api-1",
      commandType: "prompt",
    });
    const repeated = await api("POST", path, { body: { type: "prompt", text: "hello", commandId: "cmd-api-1" } });
    expect(repeated.body).toEqual(accepted.body);
    await idle("s-api-1", 2);
    const outcomes = (await stack.client.replay("s-api-1")).tree; // the log ran one prompt
    expect(outcomes.entries.filter((e) => e.type === "message")).toHaveLength(2);

    const rejected = await api("POST", path, { body: { type: "label", targetId: "no-such-entry", label: "x" } });
    expect(rejected.status).toBe(200);
    expect(rejected.body.event).toMatchObject({ type: "command_rejected", code: "not_found" });

    const pending = await api("POST", `${path}?timeoutMs=0`, { body: { type: "set_name", name: "named" } });
    expect(pending.status).toBe(202);
    expect(pending.body).toMatchObject({ sessionId: "s-api-1", status: "pending" });
    const settled = await api("POST", path, {
      body: { type: "set_name", name: "named", commandId: pending.body.commandId },
    });
    expect(settled.body.event).toMatchObject({ type: "command_accepted", commandId: pending.body.commandId });

    const unknownType = await api("POST", path, { body: { type: "explode" } });
    expect([unknownType.status, unknownType.body.error.code]).toEqual([400, "invalid"]);
    const withSession = await api("POST", path, { body: { type: "abort", sessionId: "s-other" } });
    expect(withSession.status).toBe(400);
    const noInput = await api("POST", path, { body: { type: "prompt" } });
    expect(noInput.status).toBe(400);
  });

  it("reads a session: state, tree, list, export; 404 for an unknown session", async () => {
    const state = await api("GET", "/v1/sessions/s-api-1");
    expect(state.body).toMatchObject({ sessionId: "s-api-1", status: "idle", name: "named", thinkingLevel: "low" });
    await expect
      .poll(async () => (await api("GET", "/v1/sessions/s-api-1/tree")).body.entries?.length, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(3);
    const list = await api("GET", "/v1/sessions?limit=100");
    expect(list.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toContain("s-api-1");
    const exported = await api("GET", "/v1/sessions/s-api-1/export");
    expect(exported.headers.get("content-type")).toMatch(/^application\/jsonl/);
    expect(JSON.parse(exported.text.split("\n")[0] as string)).toMatchObject({ type: "session", version: 3 });

    for (const path of ["/v1/sessions/s-none", "/v1/sessions/s-none/tree", "/v1/sessions/s-none/export"]) {
      const missing = await api("GET", path);
      expect([path, missing.status, missing.body.error.code]).toEqual([path, 404, "not_found"]);
    }
    const events = await api("GET", "/v1/sessions/s-none/events?follow=false");
    expect([events.status, events.body.error.code]).toEqual([404, "not_found"]);
    const badId = await api("GET", "/v1/sessions/not.a.session");
    expect(badId.status).toBe(400);
    const badResume = await api("GET", "/v1/sessions/s-api-1/events", { headers: { "last-event-id": "x" } });
    expect(badResume.status).toBe(400);
    const noRoute = await call(stack.gateway.url, "GET", "/v1/nothing-here", { token: OPERATE });
    expect([noRoute.status, noRoute.body.error.code]).toEqual([404, "not_found"]);
  });

  it("streams events (200 text/event-stream)", async () => {
    const sse = await openSse(`${stack.gateway.url}/v1/sessions/s-api-1/events?follow=false`, {
      authorization: `Bearer ${READ}`,
    });
    let frames = 0;
    for await (const f of sse.frames) if (f.id) frames++;
    checker.check("GET", "/v1/sessions/s-api-1/events", sse.status, sse.headers["content-type"] ?? null, undefined);
    expect(frames).toBeGreaterThan(5);
    const refused = await openSse(`${stack.gateway.url}/v1/sessions/s-api-1/events`);
    expect(refused.status).toBe(401);
    refused.close();
  });

  it("imports an export as a new session (201) and refuses a file that is not pi v3 JSONL (400) or too large (413)", async () => {
    const exported = await api("GET", "/v1/sessions/s-api-1/export");
    const imported = await api("POST", "/v1/sessions/import?sessionId=s-api-imported", { text: exported.text });
    expect(imported.status).toBe(201);
    const source = await stack.client.replay("s-api-1");
    // The outcome comes first on the log, the imported entries right after it.
    await expect
      .poll(async () => (await api("GET", "/v1/sessions/s-api-imported")).body.messages, { timeout: 10_000 })
      .toEqual(JSON.parse(JSON.stringify(source.agent.messages)));
    const garbage = await api("POST", "/v1/sessions/import", { text: "this is not jsonl\n" });
    expect([garbage.status, garbage.body.error.code]).toEqual([400, "invalid"]);
    const huge = await api("POST", "/v1/sessions/import", { text: "x".repeat(100 * 1024) });
    expect([huge.status, huge.body.error.code]).toEqual([413, "too_large"]);
  });

  it("forks a session at an entry", async () => {
    const state = await api("GET", "/v1/sessions/s-api-1");
    const tree = (await stack.client.replay("s-api-1")).tree;
    const firstMessage = tree.entries.find((e) => e.type === "message");
    const fork = await api("POST", "/v1/sessions", {
      body: { sessionId: "s-api-fork", forkFrom: { sessionId: "s-api-1", entryId: firstMessage?.id } },
    });
    expect(fork.status).toBe(201);
    await expect
      .poll(async () => (await api("GET", "/v1/sessions/s-api-fork")).body.messages, { timeout: 10_000 })
      .toEqual([state.body.messages[0]]);
    const forked = await api("GET", "/v1/sessions/s-api-fork");
    expect(forked.body.forkedFrom).toEqual({ sessionId: "s-api-1", entryId: firstMessage?.id });
    const badFork = await api("POST", "/v1/sessions", {
      body: { forkFrom: { sessionId: "s-api-1", entryId: "no-such-entry" } },
    });
    expect([badFork.status, badFork.body.error.code]).toEqual([404, "not_found"]);
  });

  it("lists a pending tool approval and takes the decision through the commands route", async () => {
    stack.fake.script(
      fakeReply([
        fakeText("Writing."),
        fakeToolUse("write", { path: "ok.txt", content: "ok\n" }, { id: "toolu_appr_1" }),
      ]),
      fakeReply("Written."),
    );
    await api("POST", "/v1/sessions/s-api-appr/commands", { body: { type: "prompt", text: "write it" } });
    let approvals: { sessionId: string; toolCallId: string; toolName: string }[] = [];
    await expect
      .poll(
        async () => {
          approvals = (await api("GET", "/v1/approvals", { token: READ })).body.approvals;
          return approvals.length;
        },
        { timeout: 15_000 },
      )
      .toBe(1);
    expect(approvals[0]).toMatchObject({ sessionId: "s-api-appr", toolName: "write", args: { path: "ok.txt" } });
    const one = await api("GET", "/v1/approvals?sessionId=s-api-appr");
    expect(one.body.approvals).toEqual(approvals);
    const decided = await api("POST", "/v1/sessions/s-api-appr/commands", {
      body: { type: "approve_tool_call", toolCallId: approvals[0]?.toolCallId },
    });
    expect(decided.body.event.type).toBe("command_accepted");
    await idle("s-api-appr", 4);
    expect((await api("GET", "/v1/approvals")).body.approvals).toEqual([]);
  });

  it("approval rules over HTTP: an argument pattern allows, a tenant rule denies, an edited approval runs with its arguments", async () => {
    const sid = "s-api-rules";
    const tenantRules = [
      { tool: "wr*", args: { pointer: "/path", regex: "^secret" }, action: "deny", reason: "no secrets" },
    ];
    const setTenant = await api("PUT", "/v1/approval-rules", { body: { rules: tenantRules } });
    expect(setTenant.body).toEqual({ rules: tenantRules });
    expect((await api("GET", "/v1/approval-rules", { token: READ })).body).toEqual({ rules: tenantRules });
    const bad = await api("PUT", "/v1/approval-rules", { body: { rules: [{ tool: "write", action: "maybe" }] } });
    expect([bad.status, bad.body.error.code]).toEqual([400, "invalid"]);
    await api("POST", `/v1/sessions/${sid}/commands`, { body: { type: "create_session" } });
    const sessionRules = [{ tool: "write", args: { pointer: "/path", regex: "^notes/" }, action: "allow" }];
    const setSession = await api("PUT", `/v1/sessions/${sid}/approval-rules`, { body: { rules: sessionRules } });
    expect(setSession.body.event).toMatchObject({ type: "command_accepted", commandType: "set_approval_rules" });
    expect((await api("GET", `/v1/sessions/${sid}/approval-rules`, { token: READ })).body).toEqual({
      rules: sessionRules,
    });
    // One batch: notes/ is allowed by the session's pattern, secret* denied by the tenant's, and the
    // third waits (the worker default asks for write) and is approved with other arguments.
    stack.fake.script(
      fakeReply([
        fakeToolUse("write", { path: "notes/a.txt", content: "a\n" }, { id: "toolu_rule_allow" }),
        fakeToolUse("write", { path: "secret.txt", content: "s\n" }, { id: "toolu_rule_deny" }),
        fakeToolUse("write", { path: "draft.txt", content: "draft\n" }, { id: "toolu_rule_ask" }),
      ]),
      fakeReply("Done."),
    );
    await api("POST", `/v1/sessions/${sid}/commands`, { body: { type: "prompt", text: "write them" } });
    await expect
      .poll(async () => (await api("GET", `/v1/approvals?sessionId=${sid}`)).body.approvals.length, { timeout: 15_000 })
      .toBe(1);
    const edited = { path: "final.txt", content: "edited\n" };
    const misfit = await api("POST", `/v1/sessions/${sid}/commands`, {
      body: { type: "approve_tool_call", toolCallId: "toolu_rule_ask", args: { path: "final.txt" } },
    });
    expect(misfit.body.event).toMatchObject({ type: "command_rejected", code: "invalid" });
    const approved = await api("POST", `/v1/sessions/${sid}/commands`, {
      body: { type: "approve_tool_call", toolCallId: "toolu_rule_ask", args: edited },
    });
    expect(approved.body.event.type).toBe("command_accepted");
    await idle(sid, 6);
    const events = [];
    for await (const item of stack.client.events(sid, { signal: AbortSignal.timeout(3_000) })) {
      events.push(item.event);
      if (item.event.type === "agent_end") break;
    }
    expect(events.filter((e) => e.type === "tool_approval_requested").map((e) => e.toolCallId)).toEqual([
      "toolu_rule_ask",
    ]);
    expect(events.find((e) => e.type === "tool_approval_resolved")).toMatchObject({
      toolCallId: "toolu_rule_ask",
      approved: true,
      editedArgs: edited,
    });
    const results = new Map(
      events.flatMap((e) =>
        e.type === "tool_execution_end" ? [[e.toolCallId, { isError: e.isError, text: JSON.stringify(e.result) }]] : [],
      ),
    );
    expect(results.get("toolu_rule_allow")?.isError).toBe(false);
    expect(results.get("toolu_rule_deny")).toEqual({
      isError: true,
      text: expect.stringContaining("Tool call denied by policy (tenant rule 0): no secrets"),
    });
    expect(results.get("toolu_rule_ask")?.text).toContain("final.txt");
    const ws = join(stack.workspace, sid);
    expect(readFileSync(join(ws, "final.txt"), "utf8")).toBe("edited\n");
    expect([
      existsSync(join(ws, "notes/a.txt")),
      existsSync(join(ws, "secret.txt")),
      existsSync(join(ws, "draft.txt")),
    ]).toEqual([true, false, false]);
    await api("PUT", "/v1/approval-rules", { body: { rules: [] } });
    expect((await api("GET", "/v1/approval-rules")).body).toEqual({ rules: [] });
  });

  it("webhooks: register (201), list without secrets, delete (204), then 404", async () => {
    const created = await api("POST", "/v1/webhooks", {
      body: { url: "http://127.0.0.1:9/hook", events: ["agent_end"], sessionId: "s-api-1" },
    });
    expect(created.status).toBe(201);
    expect(created.body.secret).toEqual(expect.any(String));
    const listed = await api("GET", "/v1/webhooks", { token: READ });
    expect(listed.body.webhooks).toEqual([
      {
        id: created.body.id,
        url: "http://127.0.0.1:9/hook",
        events: ["agent_end"],
        sessionId: "s-api-1",
        createdAt: created.body.createdAt,
        startSeq: created.body.startSeq,
        state: "active",
      },
    ]);
    const shown = await api("GET", `/v1/webhooks/${created.body.id}`, { token: READ });
    expect(shown.body).toMatchObject({
      id: created.body.id,
      state: "active",
      status: { delivered: 0, failed: 0, consecutiveFailures: 0, lastDeliveries: [], lastFailures: [] },
    });
    const enabled = await api("POST", `/v1/webhooks/${created.body.id}/enable`);
    expect([enabled.status, enabled.body.state]).toEqual([200, "active"]);
    expect((await api("GET", "/v1/webhooks/wh-none", { token: READ })).status).toBe(404);
    const badUrl = await api("POST", "/v1/webhooks", { body: { url: "ftp://x", events: ["agent_end"] } });
    expect(badUrl.status).toBe(400);
    const badEvent = await api("POST", "/v1/webhooks", {
      body: { url: "http://127.0.0.1:9/", events: ["no_such_event"] },
    });
    expect(badEvent.status).toBe(400);
    expect((await api("DELETE", `/v1/webhooks/${created.body.id}`)).status).toBe(204);
    const gone = await api("DELETE", `/v1/webhooks/${created.body.id}`);
    expect([gone.status, gone.body.error.code]).toEqual([404, "not_found"]);
  });

  it("fleet health: the doctor's report (partitions, lease holders, workers, tools, store lag)", async () => {
    const health = await api("GET", "/v1/fleet/health", { token: READ });
    expect(health.status).toBe(200);
    expect(health.body.partitions).toBe(4);
    expect(health.body.workers.loop.length).toBeGreaterThan(0);
    expect(health.body.workers.runners.length).toBeGreaterThan(0);
    expect(health.body.tools.map((t: { name: string }) => t.name)).toContain("write");
    const loopLeases = health.body.leases.find((l: { role: string }) => l.role === "loop");
    expect(loopLeases.held + loopLeases.unheld.length).toBe(4);
    expect(health.body.storeLag).toEqual(expect.any(Number));
    // The probe write was stored: JetStream takes writes.
    expect(health.body.storage).toEqual({
      usedBytes: expect.any(Number),
      limitBytes: null,
      full: false,
      probeError: null,
    });
    expect((await call(stack.gateway.url, "GET", "/v1/fleet/health")).status).toBe(401);
  });

  it("serves the web console at / with index.html for app paths; /v1 paths stay API 404s", async () => {
    for (const path of ["/", "/sessions/s-any", "/approvals"]) {
      const page = await call(stack.gateway.url, "GET", path);
      expect([path, page.status, page.headers.get("content-type")]).toEqual([path, 200, "text/html; charset=utf-8"]);
      expect(page.text).toContain('<div id="app">');
    }
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec((await call(stack.gateway.url, "GET", "/")).text)?.[1];
    const js = await call(stack.gateway.url, "GET", asset ?? "/assets/missing.js");
    expect([js.status, js.headers.get("content-type")]).toEqual([200, "text/javascript; charset=utf-8"]);
    expect((await call(stack.gateway.url, "GET", "/assets/../../package.json")).status).toBe(404);
    const api404 = await call(stack.gateway.url, "GET", "/v1/nope", { token: OPERATE });
    expect([api404.status, api404.body.error.code]).toEqual([404, "not_found"]);
  });

  it("the tenant's daily budget: spend by session, limits set by an operate token, enforced, removed", async () => {
    const today = utcDayOf(Date.now());
    const before = await api("GET", "/v1/budget", { token: READ });
    expect([before.status, before.body.day, before.body.limits]).toEqual([200, today, null]);
    // One run today, so the tenant has spent: the loop writes the session's record at its end.
    const sessionId = "s-api-budget";
    expect((await api("POST", "/v1/sessions", { body: { sessionId } })).status).toBe(201);
    const path = `/v1/sessions/${sessionId}/commands`;
    stack.fake.script(fakeReply([fakeText("spent")]));
    expect((await api("POST", path, { body: { type: "prompt", text: "spend" } })).status).toBe(200);
    await idle(sessionId, 2);
    const spentOf = async () =>
      (
        (await api("GET", "/v1/budget", { token: READ })).body.sessions as Array<{
          sessionId: string;
          outputTokens: number;
        }>
      ).find((s) => s.sessionId === sessionId);
    await expect.poll(async () => (await spentOf())?.outputTokens ?? 0).toBeGreaterThan(0);
    const spent = await api("GET", `/v1/budget?day=${today}`, { token: READ });
    expect(spent.body.total.outputTokens).toBeGreaterThanOrEqual((await spentOf())?.outputTokens ?? Number.NaN);
    expect((await api("GET", "/v1/budget?day=1999-01-01", { token: READ })).body).toMatchObject({
      day: "1999-01-01",
      sessions: [],
      total: { outputTokens: 0, costUsd: 0 },
    });

    // Bad input is a 400 (an unknown field is not ignored: a typo must not leave the tenant unlimited).
    for (const [body, pattern] of [
      [{ outputToken: 5 }, /outputToken/],
      [{ costUsd: -1 }, /costUsd/],
      [{ outputTokens: 1.5 }, /outputTokens/],
    ] as const) {
      const bad = await api("PUT", "/v1/budget", { body });
      expect([bad.status, bad.body.error.code]).toEqual([400, "invalid"]);
      expect(bad.body.error.message).toMatch(pattern);
    }
    const badDay = await api("GET", "/v1/budget?day=today", { token: READ });
    expect([badDay.status, badDay.body.error.code]).toEqual([400, "invalid"]);
    const readOnly = await api("PUT", "/v1/budget", { token: READ, body: { outputTokens: 1 } });
    expect([readOnly.status, readOnly.body.error.code]).toEqual([403, "forbidden"]);

    const set = await api("PUT", "/v1/budget", { body: { outputTokens: 1 } });
    expect([set.status, set.body]).toEqual([200, { limits: { outputTokens: 1 } }]);
    expect((await api("GET", "/v1/budget", { token: READ })).body.limits).toEqual({ outputTokens: 1 });
    // The loop follows the limits with a KV watch: the next prompt is refused once it has them (the
    // answer is the outcome event).
    stack.fake.script(fakeReply([fakeText("in case the limits were not seen yet")]));
    await expect
      .poll(async () => {
        await idle(sessionId, 0);
        const answer = await api("POST", path, { body: { type: "prompt", text: "more" } });
        return `${answer.body.event?.type} ${answer.body.event?.code}`;
      })
      .toBe("command_rejected budget_exceeded");

    expect((await api("DELETE", "/v1/budget", { token: READ })).status).toBe(403);
    const removed = await api("DELETE", "/v1/budget");
    expect(removed.status).toBe(204);
    expect((await api("GET", "/v1/budget", { token: READ })).body.limits).toBeNull();
    stack.fake.script(fakeReply([fakeText("again")]), fakeReply([fakeText("and again")]));
    await idle(sessionId, 0);
    const messages = (await api("GET", `/v1/sessions/${sessionId}`, { token: READ })).body.messages.length as number;
    await expect
      .poll(async () => {
        await idle(sessionId, 0);
        return (await api("POST", path, { body: { type: "prompt", text: "more" } })).body.event?.type;
      })
      .toBe("command_accepted");
    await idle(sessionId, messages + 2);
  });

  it("archive, restore and delete a session (test/lifecycle covers them in depth)", async () => {
    stack.fake.script(fakeReply([fakeText("to be archived")]));
    await api("POST", "/v1/sessions/s-api-life/commands", { body: { type: "prompt", text: "hi" } });
    await idle("s-api-life", 2);
    const archived = await api("POST", "/v1/sessions/s-api-life/archive");
    expect([archived.status, archived.body.record.type]).toEqual([200, "session_archived"]);
    const restored = await api("POST", "/v1/sessions", { body: { restoreFrom: "s-api-life" } });
    expect([restored.status, restored.body.record.type]).toEqual([201, "session_restored"]);
    expect((await api("DELETE", "/v1/sessions/s-api-life", { token: READ })).status).toBe(403);
    const deleted = await api("DELETE", "/v1/sessions/s-api-life");
    expect([deleted.status, deleted.body.record.type]).toEqual([200, "session_deleted"]);
    expect((await api("GET", "/v1/sessions/s-api-life")).status).toBe(404);
  });

  it("stream tickets open a session's events without a token, for that session only", async () => {
    const issued = await api("POST", "/v1/sessions/s-api-1/events/ticket", { token: READ });
    expect(issued.status).toBe(201);
    expect(issued.body.url).toBe(`/v1/sessions/s-api-1/events?ticket=${encodeURIComponent(issued.body.ticket)}`);
    const stream = await api("GET", `${issued.body.url}&follow=false`, { token: "" });
    expect([stream.status, stream.headers.get("content-type")]).toEqual([200, "text/event-stream; charset=utf-8"]);
    expect(stream.text).toContain("event: session_created");
    const other = await api("GET", `/v1/sessions/s-other/events?ticket=${encodeURIComponent(issued.body.ticket)}`, {
      token: "",
    });
    expect([other.status, other.body.error]).toEqual([
      401,
      { code: "unauthorized", message: "the ticket is for another session" },
    ]);
    const forged = await api("GET", "/v1/sessions/s-api-1/events?ticket=v1.e30.AAAA", { token: "" });
    expect(forged.status).toBe(401);
    expect((await api("POST", "/v1/sessions/s-none/events/ticket", { token: READ })).status).toBe(404);
  });

  it("the change feed names the sessions that changed and whether approvals may have, opened by token or ticket", async () => {
    const feed = await openSse(`${stack.gateway.url}/v1/changes`, { authorization: `Bearer ${READ}` });
    checker.check("GET", "/v1/changes", feed.status, feed.headers["content-type"] ?? null, undefined);
    expect([feed.status, feed.headers["content-type"]]).toEqual([200, "text/event-stream; charset=utf-8"]);
    await api("POST", "/v1/sessions/s-api-1/commands", { body: { type: "set_name", name: "changed" } });
    let seen: { sessions: string[]; approvals: boolean } | undefined;
    for await (const f of feed.frames) {
      if (f.event !== "changes") continue;
      const batch = JSON.parse(f.data ?? "{}") as { sessions: string[]; approvals: boolean };
      if (batch.sessions.includes("s-api-1")) {
        seen = batch;
        break;
      }
    }
    feed.close();
    expect(seen?.sessions).toContain("s-api-1");
    expect(typeof seen?.approvals).toBe("boolean");

    const issued = await api("POST", "/v1/changes/ticket", { token: READ });
    expect(issued.status).toBe(201);
    expect(issued.body.url).toBe(`/v1/changes?ticket=${encodeURIComponent(issued.body.ticket)}`);
    const byTicket = await openSse(`${stack.gateway.url}${issued.body.url}`);
    expect(byTicket.status).toBe(200);
    byTicket.close();
    // A feed ticket opens no session's stream, and a session's ticket does not open the feed.
    const session = await api("GET", `/v1/sessions/s-api-1/events?ticket=${encodeURIComponent(issued.body.ticket)}`, {
      token: "",
    });
    expect(session.status).toBe(401);
    const sessionTicket = await api("POST", "/v1/sessions/s-api-1/events/ticket", { token: READ });
    const refused = await openSse(
      `${stack.gateway.url}/v1/changes?ticket=${encodeURIComponent(sessionTicket.body.ticket)}`,
    );
    expect(refused.status).toBe(401);
    refused.close();
    expect((await api("POST", "/v1/changes/ticket", { token: "" })).status).toBe(401);
  });

  it("serves an object a session's events refer to, and only that session's", async () => {
    const text = "z".repeat(40_000);
    const sent = await api("POST", "/v1/sessions/s-api-1/commands", {
      body: { type: "append_message", message: { role: "user", content: [{ type: "text", text }], timestamp: 1 } },
    });
    expect(sent.body.event.type).toBe("command_accepted");
    // The message's entry follows the acceptance.
    const referenced = async () => {
      const view = await stack.client.replay("s-api-1");
      const blocks = view.tree.entries.flatMap((e) =>
        e.type === "message" && Array.isArray(e.message.content)
          ? (e.message.content as { blob?: { name: string } }[])
          : [],
      );
      return blocks.find((c) => c.blob)?.blob?.name;
    };
    await expect.poll(referenced).toMatch(/^input\/s-api-1\//);
    const name = encodeURIComponent((await referenced()) as string);
    const blob = await api("GET", `/v1/sessions/s-api-1/blob?name=${name}`, { token: READ });
    expect([blob.status, blob.text]).toEqual([200, text]);
    expect((await api("GET", `/v1/sessions/s-other/blob?name=${name}`, { token: READ })).status).toBe(404);
  });

  it("AG-UI: a run streams as text/event-stream (test/gateway/agui.test.ts covers it in depth)", async () => {
    stack.fake.script(fakeReply("Hello over AG-UI."));
    const bad = await api("POST", "/v1/agui", { body: { threadId: "not a session id", runId: "r", messages: [] } });
    expect([bad.status, bad.body.error.code]).toEqual([400, "invalid"]);
    const run = await api("POST", "/v1/agui", {
      body: { threadId: "s-api-agui", runId: "r-api-1", messages: [{ id: "u1", role: "user", content: "hi" }] },
    });
    expect(run.status).toBe(200);
    expect(run.text).toContain('"type":"RUN_FINISHED"');
    const resumed = await api("GET", "/v1/agui/s-api-agui?after=0", { token: READ });
    expect(resumed.text).toContain('"runId":"r-api-1"');
    expect((await api("GET", "/v1/agui/s-api-none", { token: READ })).status).toBe(404);
  });

  it("serves MCP at /v1/mcp: JSON-RPC over POST answered as an SSE stream, GET and DELETE 405", async () => {
    const rpc = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };
    const accept = { accept: "application/json, text/event-stream" };
    const listed = await api("POST", "/v1/mcp", { body: rpc, token: READ, headers: accept });
    expect(listed.status).toBe(200);
    expect(listed.text).toContain('"name":"read_session"');
    expect(listed.text).not.toContain('"name":"run_agent"');
    expect((await api("POST", "/v1/mcp", { body: rpc, token: "" })).status).toBe(401);
    expect((await api("POST", "/v1/mcp", { body: { not: "json-rpc" } })).status).toBe(400);
    for (const method of ["GET", "DELETE"]) {
      const refused = await api(method, "/v1/mcp");
      expect([refused.status, refused.headers.get("allow")]).toEqual([405, "POST"]);
    }
  });

  it("schedules: create, list, show with next fires, pause, resume, trigger, history, delete", async () => {
    stack.fake.script(fakeReply("scheduled answer"));
    const def = {
      scheduleId: "api-daily",
      spec: { kind: "cron", cron: "0 9 * * *", timezone: "Europe/Berlin" },
      target: { kind: "new_session", create: { config: { thinkingLevel: "low" } }, prompt: "daily report" },
    };
    const created = await api("POST", "/v1/schedules", { body: def });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ scheduleId: "api-daily", paused: false, definition: { overlap: "skip" } });
    expect(created.body.nextFires).toHaveLength(5);
    // 09:00 in Berlin is 08:00 UTC in winter.
    expect(new Date(created.body.nextFires[0]).toISOString()).toMatch(/T08:00:00\.000Z$/);
    expect((await api("POST", "/v1/schedules", { body: def })).status).toBe(409);
    const badCron = await api("POST", "/v1/schedules", {
      body: { ...def, scheduleId: "api-bad", spec: { kind: "cron", cron: "99 * * * *" } },
    });
    expect([badCron.status, badCron.body.error.code]).toEqual([400, "invalid"]);
    const unknownOption = await api("POST", "/v1/schedules", {
      body: { ...def, scheduleId: "api-bad", target: { ...def.target, create: { confg: {} } } },
    });
    expect(unknownOption.status).toBe(400);
    expect(
      (await api("GET", "/v1/schedules")).body.schedules.map((s: { scheduleId: string }) => s.scheduleId),
    ).toContain("api-daily");
    expect((await api("GET", "/v1/schedules/api-daily")).status).toBe(200);
    expect((await api("GET", "/v1/schedules/nope")).status).toBe(404);
    const paused = await api("POST", "/v1/schedules/api-daily/pause", { body: { note: "holiday" } });
    expect([paused.body.paused, paused.body.pauseNote, paused.body.nextFires]).toEqual([true, "holiday", []]);
    expect((await api("POST", "/v1/schedules/api-daily/resume")).body.paused).toBe(false);
    const trig = await api("POST", "/v1/schedules/api-daily/trigger");
    expect(trig.status).toBe(202);
    // The in-process loop worker's scheduler fires it into a new session.
    await expect
      .poll(async () => (await api("GET", "/v1/schedules/api-daily/history?limit=10")).body.items[0]?.event.type)
      .toBe("schedule_fired");
    const history = await api("GET", "/v1/schedules/api-daily/history");
    const fired = history.body.items[0].event;
    expect(fired).toMatchObject({ slot: { trigger: trig.body.triggerId }, commandType: "prompt" });
    expect(fired.sessionId).toBe(`api-daily-t-${trig.body.triggerId}`);
    expect((await api("DELETE", "/v1/schedules/api-daily")).status).toBe(204);
    expect((await api("GET", "/v1/schedules/api-daily/history")).status).toBe(404);
    expect((await api("DELETE", "/v1/schedules/api-daily")).status).toBe(404);
  });

  it("children (change 57): a session without agent calls has none; an unknown one is 404", async () => {
    expect((await api("POST", "/v1/sessions", { body: { sessionId: "s-api-kids" } })).status).toBe(201);
    await expect
      .poll(async () => (await api("GET", "/v1/sessions/s-api-kids/children", { token: READ })).status)
      .toBe(200);
    const none = await api("GET", "/v1/sessions/s-api-kids/children?depth=2", { token: READ });
    expect(none.body).toEqual({ sessionId: "s-api-kids", children: [] });
    const unknown = await api("GET", "/v1/sessions/s-api-nobody/children", { token: READ });
    expect([unknown.status, unknown.body.error.code]).toEqual([404, "not_found"]);
  });

  it("agents (change 54): versions written and read, a session from one, its count", async () => {
    const created = await api("POST", "/v1/agents", { body: { name: "api-agent", settings: { systemPrompt: "api" } } });
    expect([created.status, created.body.version]).toEqual([201, 1]);
    expect((await api("POST", "/v1/agents", { body: { name: "api-agent", settings: {} } })).status).toBe(409);
    expect((await api("POST", "/v1/agents", { body: { name: "api-x", settings: {} }, token: READ })).status).toBe(403);
    const next = await api("POST", "/v1/agents/api-agent/versions", { body: { settings: { thinkingLevel: "low" } } });
    expect([next.status, next.body.version]).toEqual([201, 2]);
    expect((await api("POST", "/v1/agents/api-none/versions", { body: { settings: {} } })).status).toBe(404);
    expect((await api("POST", "/v1/sessions", { body: { agent: "api-agent@1" } })).status).toBe(201);
    await expect
      .poll(
        async () =>
          (await api("GET", "/v1/agents/api-agent", { token: READ })).body.versions.map(
            (v: { sessions: number }) => v.sessions,
          ),
        { timeout: 10_000 },
      )
      .toEqual([1, 0]);
    expect((await api("GET", "/v1/agents", { token: READ })).body.agents).toContainEqual({
      name: "api-agent",
      latest: 2,
      updatedAt: expect.any(Number),
      sessions: 1,
    });
    const v2 = await api("GET", "/v1/agents/api-agent/versions/2", { token: READ });
    expect(v2.body).toMatchObject({ version: 2, settings: { thinkingLevel: "low" }, sessions: 0 });
    expect((await api("GET", "/v1/agents/api-agent/versions/3", { token: READ })).status).toBe(404);
    expect((await api("GET", "/v1/agents/api-none", { token: READ })).status).toBe(404);
  });

  it("every route of the OpenAPI document was exercised and matched it", () => {
    // /readyz 503 and the 503s of the other routes are exercised by the next test.
    expect(checker.missing()).toEqual([]);
  });

  it("503 when NATS is unreachable", async () => {
    await stack.nats.stop();
    await expect.poll(async () => (await api("GET", "/readyz", { token: "" })).status, { timeout: 10_000 }).toBe(503);
    const down = await api("GET", "/v1/sessions/s-api-1");
    expect([down.status, down.body.error.code]).toEqual([503, "unavailable"]);
    const send = await api("POST", "/v1/sessions/s-api-1/commands", { body: { type: "abort" } });
    expect(send.status).toBe(503);
    expect((await api("GET", "/healthz", { token: "" })).status).toBe(200);
  });
});
