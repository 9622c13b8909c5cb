// The whole stack in operator mode: nats-server trusts generated JWTs (memory resolver) and requires
// TLS; every service of tenants acme and globex logs in with its own creds file, and one gateway
// serves both, each tenant as its own account. Through HTTP, with the same session ids in both, no
// token of one tenant reads, commands, searches, lists approvals of, budgets or receives webhooks
// or live events of the other.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSse, type SseFrame } from "@fleet/gateway/testing";
import { accountOf } from "@fleet/protocol";
import { connectFleet } from "@fleet/runtime";
import {
  type FakeAnthropic,
  fakeReply,
  fakeText,
  fakeToolUse,
  getFreePort,
  type RedisServer,
  startFakeAnthropic,
  startRedis,
} from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../gateway/support.js";
import { type ServiceProcess, spawnService } from "../support/service-process.js";
import { type OperatorNats, startOperatorNats, startTenantServices, type TenantServices } from "./support.js";

const TENANTS = ["acme", "globex"] as const;
type Tenant = (typeof TENANTS)[number];
const SHARED = "s-shared";
const GLOBEX_ONLY = "s-globex-only";
const ACME_ONLY = "s-acme-only";
const TOKENS: Record<Tenant, { read: string; operate: string }> = {
  acme: { read: "acme-read-token-0123456789", operate: "acme-operate-token-0123456789" },
  globex: { read: "globex-read-token-0123456789", operate: "globex-operate-token-0123456789" },
};

let operator: OperatorNats;
let redis: RedisServer;
let dir: string;
let gateway: ServiceProcess;
let base: string;
const fakes: Record<string, FakeAnthropic> = {};
const services: TenantServices[] = [];
const extraGateways: ServiceProcess[] = [];
/** Webhook POSTs received, by the tenant whose receiver got them. */
const received: Record<Tenant, { sessionId: string; event: { type: string } }[]> = { acme: [], globex: [] };
const receivers: Server[] = [];
/** Every cross-tenant attempt, with the answer it got (printed at the end). */
const attempts: { attempt: string; answer: string }[] = [];

const api = (tenant: Tenant, method: string, path: string, body?: unknown, role: "read" | "operate" = "operate") =>
  call(base, method, path, { token: TOKENS[tenant][role], ...(body !== undefined ? { body } : {}) });

/** A cross-tenant attempt: performed, its answer recorded, then checked by the caller. */
async function attempt<T extends { status: number; body: unknown }>(what: string, run: () => Promise<T>): Promise<T> {
  const answer = await run();
  attempts.push({ attempt: what, answer: `${answer.status} ${JSON.stringify(answer.body ?? null).slice(0, 160)}` });
  return answer;
}

/** A read-token GET of one tenant, recorded as a cross-tenant attempt. */
const readAs = (tenant: Tenant, path: string) =>
  attempt(`${tenant} read token GET ${path}`, () => api(tenant, "GET", path, undefined, "read"));

/** The session's events so far (`follow=false`), as parsed frames. */
async function eventsOf(tenant: Tenant, sessionId: string): Promise<{ status: number; events: SseFrame[] }> {
  const stream = await openSse(`${base}/v1/sessions/${sessionId}/events?follow=false`, {
    authorization: `Bearer ${TOKENS[tenant].read}`,
  });
  const events: SseFrame[] = [];
  if (stream.status !== 200) {
    stream.close();
    return { status: stream.status, events };
  }
  for await (const frame of stream.frames) if (frame.event) events.push(frame);
  return { status: stream.status, events };
}

/** Waits for an event of `type` after `after` on the tenant's session (live SSE). */
async function waitForEvent(tenant: Tenant, sessionId: string, type: string, after: number): Promise<SseFrame> {
  const stream = await openSse(`${base}/v1/sessions/${sessionId}/events?after=${after}`, {
    authorization: `Bearer ${TOKENS[tenant].read}`,
  });
  try {
    for await (const frame of stream.frames) if (frame.event === type) return frame;
    throw new Error(`${tenant} ${sessionId}: the stream ended before ${type}`);
  } finally {
    stream.close();
  }
}

async function prompt(tenant: Tenant, sessionId: string, text: string): Promise<number> {
  const sent = await api(tenant, "POST", `/v1/sessions/${sessionId}/commands`, { type: "prompt", text });
  expect([sent.status, sent.body.event.type], JSON.stringify(sent.body)).toEqual([200, "command_accepted"]);
  return sent.body.seq as number;
}

const seqOf = async (tenant: Tenant, sessionId: string) =>
  (await api(tenant, "GET", `/v1/sessions/${sessionId}`, undefined, "read")).body.seq as number;

function spawnGateway(tokensFile: string, port: number, env: Record<string, string> = {}) {
  const proc = spawnService("gateway", {
    NATS_URL: operator.nats.url,
    FLEET_GATEWAY_PORT: String(port),
    FLEET_GATEWAY_TOKENS: tokensFile,
    FLEET_GATEWAY_WEBHOOK_BACKOFF_MS: "100",
    // Webhook receivers of this test listen on loopback.
    FLEET_WEBHOOK_ALLOW_PRIVATE: "1",
    ...env,
  });
  extraGateways.push(proc);
  return proc;
}

function writeTokens(name: string, tenants: Record<string, Record<string, string>>): string {
  const path = join(dir, name);
  const tokens = TENANTS.flatMap((tenant) =>
    (["read", "operate"] as const).map((role) => ({ token: TOKENS[tenant][role], tenant, role })),
  );
  writeFileSync(path, JSON.stringify({ tokens, tenants }));
  return path;
}

const gatewayLogin = (tenant: string) => ({
  natsCreds: operator.credsOf(tenant, "gateway"),
  natsTlsCa: operator.certs.ca,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fleet-gw-tenants-"));
  [operator, redis] = await Promise.all([startOperatorNats([...TENANTS]), startRedis()]);
  fakes.acme = await startFakeAnthropic();
  fakes.acme.script(
    fakeReply([fakeText("acme writes."), fakeToolUse("write", { path: "who.txt", content: "acme\n" })]),
    fakeReply("done for acme"),
    fakeReply("second run for acme"),
    fakeReply("third run for acme"),
  );
  fakes.globex = await startFakeAnthropic();
  fakes.globex.script(
    fakeReply([fakeText("globex writes."), fakeToolUse("write", { path: "who.txt", content: "globex\n" })]),
    fakeReply("done for globex"),
    fakeReply([fakeText("globex lists."), fakeToolUse("ls", {})]),
    fakeReply("listed for globex"),
    fakeReply("second run for globex"),
  );
  const workspace = join(dir, "workspace");
  services.push(
    ...(await Promise.all(
      TENANTS.map((tenant) =>
        startTenantServices(operator.logins, tenant, {
          redisUrl: redis.url,
          anthropicUrl: fakes[tenant]?.url ?? "",
          workspace,
          // globex asks a person before `ls` runs.
          ...(tenant === "globex" ? { loopEnv: { FLEET_APPROVAL_TOOLS: "ls" } } : {}),
        }),
      ),
    )),
  );
  for (const tenant of TENANTS) {
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        received[tenant].push(JSON.parse(body));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    receivers.push(server);
  }
  const port = await getFreePort();
  gateway = spawnGateway(
    writeTokens("tokens.json", { acme: gatewayLogin("acme"), globex: gatewayLogin("globex") }),
    port,
  );
  base = `http://127.0.0.1:${port}`;
  await gateway.waitForLog();
  for (let i = 0; i < 300 && (await fetch(`${base}/readyz`)).status !== 200; i++)
    await new Promise((r) => setTimeout(r, 100));

  // The same session id in both tenants, and one only globex has.
  for (const [tenant, sessionId] of [
    ["acme", SHARED],
    ["globex", SHARED],
    ["globex", GLOBEX_ONLY],
    ["acme", ACME_ONLY],
  ] as const) {
    const created = await api(tenant, "POST", "/v1/sessions", { sessionId });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
  }
  const runs = await Promise.all(TENANTS.map((tenant) => prompt(tenant, SHARED, "who are you")));
  await Promise.all(TENANTS.map((tenant, i) => waitForEvent(tenant, SHARED, "agent_end", runs[i] ?? 0)));
  const asked = await prompt("globex", GLOBEX_ONLY, "list the files");
  await waitForEvent("globex", GLOBEX_ONLY, "tool_approval_requested", asked);
}, 300_000);

afterAll(async () => {
  console.log(
    `cross-tenant attempts (${attempts.length}):\n${attempts.map((a) => `  ${a.attempt} -> ${a.answer}`).join("\n")}`,
  );
  await Promise.all([gateway, ...extraGateways].map((g) => g?.stop()));
  await Promise.all(services.map((s) => s.stop()));
  for (const r of receivers) r.close();
  await Promise.all([operator?.stop(), redis?.stop(), ...Object.values(fakes).map((f) => f.stop())]);
  rmSync(dir, { recursive: true, force: true });
});

describe("operator mode / the whole stack on creds logins over TLS", () => {
  it("puts every connection in its tenant's account, over TLS, the gateway's included", async () => {
    const connz = (await (await fetch(`${operator.nats.monitorUrl}/connz?auth=true&limit=1024`)).json()) as {
      connections: { name?: string; account?: string; tls_version?: string; authorized_user?: string }[];
    };
    const accountOfTenant = (t: string) => operator.deployment.accounts[t];
    for (const tenant of TENANTS) {
      const mine = connz.connections.filter((c) => c.account === accountOfTenant(tenant));
      // A loop, a tool runner, a store (two connections) and the gateway, at least.
      expect(mine.length, tenant).toBeGreaterThanOrEqual(5);
      expect(mine.map((c) => c.name)).toContain(`fleet-gateway-${tenant}`);
    }
    expect(connz.connections.every((c) => c.tls_version !== undefined && c.tls_version !== "")).toBe(true);
    expect(
      connz.connections.filter((c) => !TENANTS.some((t) => c.account === accountOfTenant(t))).map((c) => c.name),
    ).toEqual([]);
    expect(accountOf("acme")).toBe("ACME");
  });

  it("refuses a login without creds", async () => {
    const anonymous = await connectFleet({
      role: "reader",
      url: operator.nats.url,
      name: "anon",
      auth: { tlsCa: operator.certs.ca },
      maxReconnectAttempts: 0,
    }).then(
      () => "connected",
      (e: Error) => e.message,
    );
    expect(anonymous).toMatch(/refused the login of anonymous: .*Authorization Violation/);
  });

  it("ran both tenants' sessions with the same id apart, each in its own workspace", async () => {
    expect(readFileSync(join(dir, "workspace", "acme", SHARED, "who.txt"), "utf8")).toBe("acme\n");
    expect(readFileSync(join(dir, "workspace", "globex", SHARED, "who.txt"), "utf8")).toBe("globex\n");
    for (const tenant of TENANTS) {
      const state = await api(tenant, "GET", `/v1/sessions/${SHARED}`, undefined, "read");
      expect(state.status).toBe(200);
      expect(JSON.stringify(state.body.messages)).toContain(`done for ${tenant}`);
    }
  });
});

describe("gateway / tenant means account", () => {
  it("acme cannot read globex's sessions, trees, events or exports", async () => {
    for (const path of [`/v1/sessions/${GLOBEX_ONLY}`, `/v1/sessions/${GLOBEX_ONLY}/tree`]) {
      const answer = await readAs("acme", path);
      expect([answer.status, (answer.body as { error: { code: string } }).error.code]).toEqual([404, "not_found"]);
    }
    const exported = await readAs("acme", `/v1/sessions/${GLOBEX_ONLY}/export`);
    expect(exported.status).toBe(404);
    const events = await attempt(`acme read token GET /v1/sessions/${GLOBEX_ONLY}/events?follow=false`, async () => {
      const got = await eventsOf("acme", GLOBEX_ONLY);
      return { status: got.status, body: { events: got.events.length } };
    });
    expect(events.status).toBe(404);
    const shared = await readAs("acme", `/v1/sessions/${SHARED}`);
    expect(JSON.stringify(shared.body)).toContain("done for acme");
    expect(JSON.stringify(shared.body)).not.toContain("globex");
    const sharedEvents = await attempt(`acme read token GET /v1/sessions/${SHARED}/events?follow=false`, async () => {
      const got = await eventsOf("acme", SHARED);
      return {
        status: got.status,
        body: { events: got.events.length, mentionsGlobex: JSON.stringify(got.events).includes("globex") },
      };
    });
    expect(sharedEvents.body).toMatchObject({ mentionsGlobex: false });
  });

  it("and the other way: globex cannot read, search, command or list approvals of acme's session", async () => {
    for (const path of [
      `/v1/sessions/${ACME_ONLY}`,
      `/v1/sessions/${ACME_ONLY}/tree`,
      `/v1/sessions/${ACME_ONLY}/export`,
    ]) {
      const answer = await readAs("globex", path);
      expect(answer.status, path).toBe(404);
    }
    const events = await attempt(`globex read token GET /v1/sessions/${ACME_ONLY}/events?follow=false`, async () => {
      const got = await eventsOf("globex", ACME_ONLY);
      return { status: got.status, body: { events: got.events.length } };
    });
    expect(events.status).toBe(404);
    const search = await readAs("globex", "/v1/sessions?q=acme-only");
    expect(search.body.sessions).toEqual([]);
    const approvals = await readAs("globex", `/v1/approvals?sessionId=${ACME_ONLY}`);
    expect(approvals.body.approvals).toEqual([]);
    const before = await seqOf("acme", ACME_ONLY);
    const named = await attempt(`globex operate token POST /v1/sessions/${ACME_ONLY}/commands set_name`, () =>
      api("globex", "POST", `/v1/sessions/${ACME_ONLY}/commands`, { type: "set_name", name: "by globex" }),
    );
    expect([named.body.event.type, named.body.event.code]).toEqual(["command_rejected", "not_found"]);
    expect(await seqOf("acme", ACME_ONLY)).toBe(before);
  });

  it("acme cannot list or search globex's sessions", async () => {
    const list = await readAs("acme", "/v1/sessions");
    expect(list.body.sessions.map((s: { sessionId: string }) => s.sessionId).sort()).toEqual([ACME_ONLY, SHARED]);
    for (const q of ["globex-only", "globex"]) {
      const search = await readAs("acme", `/v1/sessions?q=${q}`);
      expect([search.status, search.body.sessions]).toEqual([200, []]);
    }
    const theirs = await api("globex", "GET", "/v1/sessions?q=globex-only", undefined, "read");
    expect(theirs.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual([GLOBEX_ONLY]);
  });

  it("acme cannot command globex's sessions, with or without the same id", async () => {
    const before = { only: await seqOf("globex", GLOBEX_ONLY), shared: await seqOf("globex", SHARED) };
    const abort = await attempt(`acme operate token POST /v1/sessions/${GLOBEX_ONLY}/commands abort`, () =>
      api("acme", "POST", `/v1/sessions/${GLOBEX_ONLY}/commands`, { type: "abort" }),
    );
    expect([abort.status, abort.body.event.type, abort.body.event.code]).toEqual([
      200,
      "command_rejected",
      "not_found",
    ]);
    const rename = await attempt(`acme operate token POST /v1/sessions/${SHARED}/commands set_name`, () =>
      api("acme", "POST", `/v1/sessions/${SHARED}/commands`, { type: "set_name", name: "renamed by acme" }),
    );
    expect(rename.body.event.type).toBe("command_accepted");
    expect({ only: await seqOf("globex", GLOBEX_ONLY), shared: await seqOf("globex", SHARED) }).toEqual(before);
    const globexList = await api("globex", "GET", "/v1/sessions", undefined, "read");
    expect(JSON.stringify(globexList.body)).not.toContain("renamed by acme");
  });

  it("acme importing a session under globex's id creates acme's own; globex's is untouched", async () => {
    const jsonl = (await api("acme", "GET", `/v1/sessions/${SHARED}/export`, undefined, "read")).text;
    const before = await seqOf("globex", GLOBEX_ONLY);
    const imported = await attempt(`acme operate token POST /v1/sessions/import?sessionId=${GLOBEX_ONLY}`, () =>
      call(base, "POST", `/v1/sessions/import?sessionId=${GLOBEX_ONLY}`, { token: TOKENS.acme.operate, text: jsonl }),
    );
    expect(imported.status).toBe(201);
    expect(await seqOf("globex", GLOBEX_ONLY)).toBe(before);
    const theirs = await api("globex", "GET", `/v1/sessions/${GLOBEX_ONLY}`, undefined, "read");
    expect(JSON.stringify(theirs.body.messages)).not.toContain("done for acme");
    // The store projects the import within moments; a loaded CI VM once took over 10 s (2026-12-06).
    await expect
      .poll(
        async () =>
          JSON.stringify((await api("acme", "GET", `/v1/sessions/${GLOBEX_ONLY}/tree`, undefined, "read")).body),
        {
          timeout: 30_000,
        },
      )
      .toContain("done for acme");
  });

  it("acme cannot list or decide globex's pending approvals", async () => {
    const all = await readAs("acme", "/v1/approvals");
    expect(all.body.approvals).toEqual([]);
    const one = await readAs("acme", `/v1/approvals?sessionId=${GLOBEX_ONLY}`);
    expect(one.body.approvals).toEqual([]);
    const pending = await api("globex", "GET", "/v1/approvals", undefined, "read");
    expect(pending.body.approvals).toHaveLength(1);
    const toolCallId = pending.body.approvals[0].toolCallId as string;
    const approve = await attempt(`acme operate token approve_tool_call ${toolCallId} on ${GLOBEX_ONLY}`, () =>
      api("acme", "POST", `/v1/sessions/${GLOBEX_ONLY}/commands`, { type: "approve_tool_call", toolCallId }),
    );
    expect(approve.body.event.type).toBe("command_rejected");
    expect((await api("globex", "GET", "/v1/approvals", undefined, "read")).body.approvals).toHaveLength(1);
    // globex decides its own.
    const seq = await seqOf("globex", GLOBEX_ONLY);
    const own = await api("globex", "POST", `/v1/sessions/${GLOBEX_ONLY}/commands`, {
      type: "approve_tool_call",
      toolCallId,
    });
    expect(own.body.event.type).toBe("command_accepted");
    await waitForEvent("globex", GLOBEX_ONLY, "agent_end", seq);
  });

  it("acme's budget is acme's: limits and spend apart", async () => {
    const set = await attempt("acme operate token PUT /v1/budget {costUsd: 5}", () =>
      api("acme", "PUT", "/v1/budget", { costUsd: 5 }),
    );
    expect(set.status).toBe(200);
    const theirs = await api("globex", "GET", "/v1/budget", undefined, "read");
    expect(theirs.body.limits).toBeNull();
    // acme's spend is its own sessions': s-shared, and its own import under globex's id (the
    // imported transcript carries the usage of acme's s-shared). The import's usage is counted after
    // its 201, message by message (seen in CI: 39 of its 156 tokens on a single read): read until
    // both are counted.
    type Spent = { sessionId: string; totalTokens: number };
    let mine = await readAs("acme", "/v1/budget");
    const spentOf = (body: { sessions: Spent[] }) => new Map(body.sessions.map((x) => [x.sessionId, x.totalTokens]));
    await expect
      .poll(
        async () => {
          mine = await readAs("acme", "/v1/budget");
          const now = spentOf(mine.body);
          return now.get(GLOBEX_ONLY) === now.get(SHARED);
        },
        { timeout: 30_000 },
      )
      .toBe(true);
    expect(mine.body.limits).toEqual({ costUsd: 5 });
    const spent = spentOf(mine.body);
    const own = (await api("acme", "GET", "/v1/sessions", undefined, "read")).body.sessions as Spent[];
    expect([...spent.keys()].every((id) => own.some((x) => x.sessionId === id))).toBe(true);
    expect(spent.get(SHARED)).toBeGreaterThan(0);
    expect(spent.get(GLOBEX_ONLY)).toBe(spent.get(SHARED));
    expect(theirs.body.sessions.map((s: { sessionId: string }) => s.sessionId).sort()).toEqual([GLOBEX_ONLY, SHARED]);
    const removed = await attempt("acme operate token DELETE /v1/budget", () => api("acme", "DELETE", "/v1/budget"));
    expect(removed.status).toBe(204);
    await api("globex", "PUT", "/v1/budget", { totalTokens: 1_000_000 });
    expect((await api("acme", "GET", "/v1/budget", undefined, "read")).body.limits).toBeNull();
    await api("globex", "DELETE", "/v1/budget");
  });

  it("acme's approval rules are acme's: written by its gateway under least privilege, unseen by globex", async () => {
    const rules = [{ tool: "bash", args: { pointer: "/command", regex: "^rm\\s" }, action: "deny" }];
    const set = await attempt("acme operate token PUT /v1/approval-rules", () =>
      api("acme", "PUT", "/v1/approval-rules", { rules }),
    );
    expect(set.status).toBe(200);
    expect((await readAs("acme", "/v1/approval-rules")).body.rules).toEqual(rules);
    expect((await api("globex", "GET", "/v1/approval-rules", undefined, "read")).body.rules).toEqual([]);
    expect((await api("acme", "PUT", "/v1/approval-rules", { rules: [] })).status).toBe(200);
    expect((await readAs("acme", "/v1/approval-rules")).body.rules).toEqual([]);
  });

  it("acme's agents are acme's: globex cannot read, list or start a session from them; names are per tenant", async () => {
    const v1 = await attempt("acme operate token POST /v1/agents", () =>
      api("acme", "POST", "/v1/agents", { name: "helper", settings: { systemPrompt: "acme helper" } }),
    );
    expect([v1.status, v1.body.version]).toEqual([201, 1]);
    expect((await readAs("acme", "/v1/agents/helper")).body.versions[0].settings.systemPrompt).toBe("acme helper");
    for (const path of ["/v1/agents/helper", "/v1/agents/helper/versions/1"]) {
      expect((await readAs("globex", path)).status).toBe(404);
    }
    expect((await readAs("globex", "/v1/agents")).body.agents).toEqual([]);
    const fromTheirs = await attempt("globex operate token POST /v1/sessions {agent: helper}", () =>
      api("globex", "POST", "/v1/sessions", { agent: "helper" }),
    );
    expect([fromTheirs.status, fromTheirs.body.error.code]).toEqual([404, "not_found"]);
    const update = await attempt("globex operate token POST /v1/agents/helper/versions", () =>
      api("globex", "POST", "/v1/agents/helper/versions", { settings: { systemPrompt: "by globex" } }),
    );
    expect(update.status).toBe(404);
    // globex's own agent of the same name is its own version 1; acme's stays as it was.
    const own = await api("globex", "POST", "/v1/agents", { name: "helper", settings: { systemPrompt: "globex" } });
    expect([own.status, own.body.version]).toEqual([201, 1]);
    expect((await readAs("acme", "/v1/agents/helper")).body.latest).toBe(1);
    // A session from acme's agent runs acme's version, and is counted in acme's store only.
    const created = await api("acme", "POST", "/v1/sessions", { agent: "helper" });
    expect(created.status).toBe(201);
    await expect
      .poll(async () => (await readAs("acme", "/v1/agents/helper")).body.versions[0].sessions, { timeout: 10_000 })
      .toBe(1);
    expect((await readAs("globex", "/v1/agents/helper")).body.versions[0].sessions).toBe(0);
  });

  it("webhooks: each tenant's receiver gets its own tenant's events only; acme cannot see or delete globex's", async () => {
    const url = (i: number) => `http://127.0.0.1:${(receivers[i]?.address() as AddressInfo | undefined)?.port}/hook`;
    const acmeHook = await api("acme", "POST", "/v1/webhooks", { url: url(0), events: ["agent_end"] });
    const globexHook = await api("globex", "POST", "/v1/webhooks", { url: url(1), events: ["agent_end"] });
    expect([acmeHook.status, globexHook.status]).toEqual([201, 201]);
    const list = await readAs("acme", "/v1/webhooks");
    expect(list.body.webhooks.map((w: { id: string }) => w.id)).toEqual([acmeHook.body.id]);
    const del = await attempt(`acme operate token DELETE /v1/webhooks/${globexHook.body.id}`, () =>
      api("acme", "DELETE", `/v1/webhooks/${globexHook.body.id}`),
    );
    expect(del.status).toBe(404);

    // globex runs the shared session: only globex's receiver hears of it.
    const run = await prompt("globex", SHARED, "again");
    await waitForEvent("globex", SHARED, "agent_end", run);
    for (let i = 0; i < 100 && received.globex.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(received.globex.map((d) => [d.sessionId, d.event.type])).toEqual([[SHARED, "agent_end"]]);
    const acmeRun = await prompt("acme", SHARED, "again");
    await waitForEvent("acme", SHARED, "agent_end", acmeRun);
    for (let i = 0; i < 100 && received.acme.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 500));
    attempts.push({
      attempt: "acme's all-sessions agent_end webhook while globex ran s-shared",
      answer: `acme receiver got ${received.acme.length} deliveries (${JSON.stringify(received.acme.map((d) => d.event.type))})`,
    });
    expect(received.acme.map((d) => [d.sessionId, d.event.type])).toEqual([[SHARED, "agent_end"]]);
    expect(received.globex).toHaveLength(1);
    expect((await api("globex", "GET", "/v1/webhooks", undefined, "read")).body.webhooks).toHaveLength(1);
  });

  it("an SSE stream of acme's s-shared gets none of globex's live events under the same id", async () => {
    const from = await seqOf("acme", SHARED);
    const stream = await openSse(`${base}/v1/sessions/${SHARED}/events?after=${from}`, {
      authorization: `Bearer ${TOKENS.acme.read}`,
    });
    const frames: SseFrame[] = [];
    const reading = (async () => {
      for await (const frame of stream.frames) if (frame.event) frames.push(frame);
    })();
    const globexRun = await prompt("globex", SHARED, "once more");
    await waitForEvent("globex", SHARED, "agent_end", globexRun);
    await new Promise((r) => setTimeout(r, 500));
    attempts.push({
      attempt: `acme read token live SSE /v1/sessions/${SHARED}/events while globex ran a prompt there`,
      answer: `${frames.length} frames`,
    });
    expect(frames).toEqual([]);
    stream.close();
    await reading;
  });

  it("acme's fleet health reports acme's deployment", async () => {
    const health = await readAs("acme", "/v1/fleet/health");
    expect(health.status).toBe(200);
    expect(health.body.partitions).toBe(4);
  });

  it("no service and no gateway was refused a subject (the gateway role has what it needs)", () => {
    for (const proc of [gateway, ...services.flatMap((s) => [s.loop, s.tools, s.store])]) {
      expect(proc.output(), proc.name).not.toContain("nats_permission_denied");
    }
  });
});

describe("gateway / identities", () => {
  it("refuses to start when a token names a tenant it has no identity for, in one line", async () => {
    const tokensFile = writeTokens("tokens-no-globex.json", { acme: gatewayLogin("acme") });
    const proc = spawnGateway(tokensFile, await getFreePort());
    const code = await new Promise<number | null>((r) => proc.proc.once("exit", (c) => r(c)));
    expect(code).toBe(2);
    expect(proc.output().trim()).toBe(
      'fleet-gateway: tokens name tenant globex with no NATS identity of its own: give each a login under "tenants" in the tokens file (e.g. {"natsCreds": "/path/<tenant>-gateway.creds"}), or run the gateway with FLEET_TENANT=<tenant> and that tenant\'s gateway user in NATS_* (FLEET_TENANT is not set)',
    );
  });

  it("reports a refused login in one line, answers 503 for that tenant and serves the other", async () => {
    const stranger = await startOperatorNats(["acme"]);
    try {
      const tokensFile = writeTokens("tokens-bad-acme.json", {
        acme: { natsCreds: stranger.credsOf("acme", "gateway"), natsTlsCa: operator.certs.ca },
        globex: gatewayLogin("globex"),
      });
      const port = await getFreePort();
      const proc = spawnGateway(tokensFile, port);
      await proc.waitForLog("gateway_nats_login_refused");
      await proc.waitForLog("gateway_nats_connected");
      const line =
        proc
          .output()
          .split("\n")
          .find((l) => l.includes("gateway_nats_login_refused")) ?? "";
      expect(JSON.parse(line).msg).toMatch(
        /^tenant acme: NATS at nats:\/\/127\.0\.0\.1:\d+ refused the login of creds user "acme-gateway" \(U[A-Z0-9]+\): .*Authorization Violation.*; retrying$/,
      );
      const gw = `http://127.0.0.1:${port}`;
      const acme = await call(gw, "GET", "/v1/sessions", { token: TOKENS.acme.read });
      expect([acme.status, acme.body.error.code]).toEqual([503, "unavailable"]);
      const globex = await call(gw, "GET", "/v1/sessions", { token: TOKENS.globex.read });
      expect(globex.status).toBe(200);
      expect((await fetch(`${gw}/readyz`)).status).toBe(503);
    } finally {
      await stranger.stop();
    }
  });
});
