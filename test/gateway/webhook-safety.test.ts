// Webhooks that cannot be pointed at the gateway's own network, that say how they are doing, and
// that stop after a run of failures: refused addresses (literal, resolved, redirected to, rebound),
// event-type filters, the status of `GET /v1/webhooks/{id}`, disabling and enabling. Against a real
// nats-server, real gateways, a real DNS server (UDP) and HTTP receivers on 127.0.0.1 and 127.0.0.2.
import { type Gateway, type GatewayWebOptions, startGateway, webOptionsOf } from "@fleet/gateway";
import { applyTopology, connectNats } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { type JetStreamClient, jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DnsServer, startDnsServer } from "./dns-server.js";
import { call, gatewayOptions, PARTITIONS } from "./support.js";
import { publishEvents, type Receiver, startReceiver } from "./webhook-receivers.js";

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let dns: DnsServer;
const open: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  nats = await startNats();
  nc = await connectNats({ url: nats.url, name: "webhook-safety" });
  await applyTopology(nc, { partitions: PARTITIONS, leaseTtlMs: 2_000 });
  js = jetstream(nc);
  dns = await startDnsServer({
    "loop.test": ["127.0.0.1"],
    "private.test": ["10.1.2.3"],
    "metadata.test": ["169.254.169.254"],
    // Public first, then loopback: a name re-pointed between a check and a connect.
    "rebind.test": ["127.0.0.1", "127.0.0.2"],
  });
}, 60_000);

// Every gateway of a deployment delivers every webhook: each test ends with the gateways it started.
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close().catch(() => undefined);
});

afterAll(async () => {
  await dns?.stop();
  await nc?.close();
  await nats?.stop();
});

async function gateway(web: Partial<GatewayWebOptions>): Promise<Gateway> {
  const g = await startGateway(
    gatewayOptions(nats.url, { web: { ...webOptionsOf(), ...web }, webhookBackoffMs: 50, webhookBackoffMaxMs: 200 }),
  );
  await g.ready;
  open.push(g);
  return g;
}

async function receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
  const r = await startReceiver(...args);
  open.push(r);
  return r;
}

const ONLY_127_0_0_1 = { kind: "list", entries: ["127.0.0.1"] } as const;

describe("gateway / webhook addresses", () => {
  it("refuses loopback, private, link-local, reserved and metadata addresses, literal or resolved", async () => {
    const target = await receiver("127.0.0.1");
    const port = target.port;
    const system = await gateway({});
    const viaDns = await gateway({ webhookDnsServers: [dns.address] });
    const refused: Array<[Gateway, string, RegExp]> = [
      [system, `http://127.0.0.1:${port}/hook`, /127\.0\.0\.1 is a loopback address/],
      [system, `http://localhost:${port}/hook`, /localhost resolves to a refused address: 127\.0\.0\.1 is a loopback/],
      [system, `http://[::1]:${port}/hook`, /::1 is a loopback address/],
      [system, `http://2130706433:${port}/hook`, /127\.0\.0\.1 is a loopback address/],
      [system, `http://0x7f.1:${port}/hook`, /127\.0\.0\.1 is a loopback address/],
      [system, `http://[::ffff:127.0.0.1]:${port}/hook`, /::ffff:7f00:1 \(127\.0\.0\.1\) is a loopback address/],
      [system, `http://0.0.0.0:${port}/hook`, /0\.0\.0\.0 is an unspecified address/],
      [system, "http://10.0.0.1/hook", /10\.0\.0\.1 is a private address/],
      [system, "http://172.16.5.4/hook", /172\.16\.5\.4 is a private address/],
      [system, "http://192.168.1.1/hook", /192\.168\.1\.1 is a private address/],
      [system, "http://100.64.0.1/hook", /100\.64\.0\.1 is a private address/],
      [system, "http://[fd12:3456::1]/hook", /fd12:3456::1 is a private address/],
      [system, "http://169.254.10.1/hook", /169\.254\.10\.1 is a link-local address/],
      [system, "http://[fe80::1]/hook", /fe80::1 is a link-local address/],
      [system, "http://169.254.169.254/latest/meta-data/", /169\.254\.169\.254 is a cloud metadata address/],
      [system, "http://100.100.100.200/hook", /100\.100\.100\.200 is a cloud metadata address/],
      [system, "http://[fd00:ec2::254]/hook", /fd00:ec2::254 is a cloud metadata address/],
      [system, "http://224.0.0.1/hook", /224\.0\.0\.1 is a multicast address/],
      [system, "http://198.18.0.1/hook", /198\.18\.0\.1 is a reserved address/],
      [system, "http://metadata.google.internal/computeMetadata/v1/", /cannot resolve metadata\.google\.internal/],
      [viaDns, `http://loop.test:${port}/hook`, /loop\.test resolves to a refused address: 127\.0\.0\.1 is a loopback/],
      [viaDns, "http://private.test/hook", /private\.test resolves to a refused address: 10\.1\.2\.3 is a private/],
      [
        viaDns,
        "http://metadata.test/hook",
        /metadata\.test resolves to a refused address: 169\.254\.169\.254 is a cloud/,
      ],
    ];
    for (const [g, url, reason] of refused) {
      const answer = await call(g.url, "POST", "/v1/webhooks", { body: { url, events: ["*"] } });
      expect([url, answer.status, answer.body?.error?.code]).toEqual([url, 400, "address_refused"]);
      expect([url, answer.body.error.message]).toEqual([url, expect.stringMatching(reason)]);
    }
    expect((await call(system.url, "GET", "/v1/webhooks")).body.webhooks).toEqual([]);

    // FLEET_WEBHOOK_ALLOW_PRIVATE=1 lets private receivers in, never the metadata services.
    const relaxed = await gateway({ webhookAllowance: { kind: "all" } });
    const metadata = await call(relaxed.url, "POST", "/v1/webhooks", {
      body: { url: "http://169.254.169.254/latest/meta-data/", events: ["*"] },
    });
    expect([metadata.status, metadata.body.error.code]).toEqual([400, "address_refused"]);
    const local = await call(relaxed.url, "POST", "/v1/webhooks", {
      body: { url: `${target.base}/hook`, events: ["*"] },
    });
    expect(local.status).toBe(201);
    await call(relaxed.url, "DELETE", `/v1/webhooks/${local.body.id}`);
    expect(target.requests).toEqual([]);
  });

  it("checks every redirect: a 307 to a refused address is not followed, one to an allowed address is", async () => {
    const forbidden = await receiver("127.0.0.2");
    const final = await receiver("127.0.0.1");
    const redirector = await receiver("127.0.0.1", (req, res) => {
      const to = req.path === "/to-forbidden" ? forbidden.base : final.base;
      res.writeHead(307, { location: `${to}/landed` }).end();
    });
    const g = await gateway({ webhookAllowance: ONLY_127_0_0_1 });
    const sessionId = "s-redirect";
    const register = (path: string) =>
      call(g.url, "POST", "/v1/webhooks", {
        body: { url: `${redirector.base}${path}`, events: ["custom"], sessionId },
      });
    const bad = await register("/to-forbidden");
    const good = await register("/to-final");
    expect([bad.status, good.status]).toEqual([201, 201]);
    const [seq] = await publishEvents(js, PARTITIONS, sessionId, [{ type: "custom", data: 1 }]);

    await expect
      .poll(() => final.requests.map((r) => [r.path, r.seq]), { timeout: 10_000 })
      .toEqual([["/landed", seq]]);
    // Successes are recorded just after their ack.
    await expect
      .poll(async () => (await call(g.url, "GET", `/v1/webhooks/${good.body.id}`)).body.status.lastDeliveries[0])
      .toMatchObject({ seq, outcome: "ok", status: 204, address: "127.0.0.1" });

    await expect
      .poll(async () => (await call(g.url, "GET", `/v1/webhooks/${bad.body.id}`)).body.status.failed, {
        timeout: 10_000,
      })
      .toBeGreaterThanOrEqual(2);
    const badStatus = (await call(g.url, "GET", `/v1/webhooks/${bad.body.id}`)).body;
    expect(badStatus.status.delivered).toBe(0);
    expect(badStatus.status.lastFailures[0]).toMatchObject({
      seq,
      outcome: "refused",
      detail: expect.stringContaining(`127.0.0.2 is a loopback address (${forbidden.base}/landed)`),
    });
    expect(forbidden.requests).toEqual([]);
    for (const id of [bad.body.id, good.body.id]) await call(g.url, "DELETE", `/v1/webhooks/${id}`);
  });

  it("connects to the address it checked, so a name re-pointed after the check reaches nothing (DNS rebinding)", async () => {
    const allowed = await receiver("127.0.0.1");
    // The same port on 127.0.0.2: where a second resolution would lead.
    const other = await receiver("127.0.0.2", undefined, allowed.port);
    const g = await gateway({ webhookAllowance: ONLY_127_0_0_1, webhookDnsServers: [dns.address] });
    const before = dns.queries.filter((q) => q === "rebind.test").length;
    const sessionId = "s-rebind";
    const registered = await call(g.url, "POST", "/v1/webhooks", {
      body: { url: `http://rebind.test:${allowed.port}/hook`, events: ["custom"], sessionId },
    });
    // The check at registration got 127.0.0.1.
    expect(registered.status).toBe(201);
    const [seq] = await publishEvents(js, PARTITIONS, sessionId, [{ type: "custom", data: "x" }]);

    // Attempt 1 resolves to 127.0.0.2: refused, not connected. Attempt 2 gets 127.0.0.1 and delivers there.
    await expect.poll(() => allowed.requests.map((r) => r.seq), { timeout: 10_000 }).toEqual([seq]);
    const statusOf = async () => (await call(g.url, "GET", `/v1/webhooks/${registered.body.id}`)).body.status;
    await expect.poll(async () => (await statusOf()).delivered).toBe(1);
    const status = await statusOf();
    expect(status).toMatchObject({ delivered: 1, failed: 1, consecutiveFailures: 0 });
    expect(status.lastFailures[0]).toMatchObject({
      seq,
      attempt: 1,
      outcome: "refused",
      detail: expect.stringContaining("rebind.test resolves to a refused address: 127.0.0.2 is a loopback address"),
    });
    expect(status.lastDeliveries[0]).toMatchObject({ seq, attempt: 2, outcome: "ok", address: "127.0.0.1" });
    expect(other.requests).toEqual([]);
    // One resolution per check: registration, attempt 1, attempt 2 (nothing resolved a second time to connect).
    expect(dns.queries.filter((q) => q === "rebind.test").length - before).toBe(3);
    await call(g.url, "DELETE", `/v1/webhooks/${registered.body.id}`);
  });
});

describe("gateway / webhook filters, status and disabling", () => {
  it("delivers only the subscribed event types, in order", async () => {
    const target = await receiver("127.0.0.1");
    const g = await gateway({ webhookAllowance: ONLY_127_0_0_1 });
    const sessionId = "s-filter";
    const some = await call(g.url, "POST", "/v1/webhooks", {
      body: { url: `${target.base}/some`, events: ["session_info", "leaf"], sessionId },
    });
    const every = await call(g.url, "POST", "/v1/webhooks", {
      body: { url: `${target.base}/every`, events: ["*"], sessionId },
    });
    const unknown = await call(g.url, "POST", "/v1/webhooks", {
      body: { url: target.base, events: ["no_such_event"] },
    });
    expect([some.status, every.status, unknown.status]).toEqual([201, 201, 400]);
    const seqs = await publishEvents(js, PARTITIONS, sessionId, [
      { type: "custom", data: 1 },
      { type: "session_info", name: "a" },
      { type: "custom", data: 2 },
      { type: "leaf" },
      { type: "session_info", name: "b" },
    ]);
    const received = (path: string) => target.requests.filter((r) => r.path === path).map((r) => [r.seq, r.type]);
    await expect.poll(() => received("/every"), { timeout: 10_000 }).toHaveLength(5);
    await expect.poll(() => received("/some"), { timeout: 10_000 }).toHaveLength(3);
    expect(received("/every")).toEqual(
      ["custom", "session_info", "custom", "leaf", "session_info"].map((t, i) => [seqs[i], t]),
    );
    expect(received("/some")).toEqual([
      [seqs[1], "session_info"],
      [seqs[3], "leaf"],
      [seqs[4], "session_info"],
    ]);
    for (const id of [some.body.id, every.body.id]) await call(g.url, "DELETE", `/v1/webhooks/${id}`);
  });

  it("disables a webhook after a run of failures, shows why, and delivers what it held once enabled", async () => {
    let failing = true;
    const target = await receiver("127.0.0.1", (_req, res) => {
      if (failing) res.writeHead(503, { "content-type": "text/plain" }).end("receiver is down for maintenance");
      else res.writeHead(200).end();
    });
    const g = await gateway({ webhookAllowance: ONLY_127_0_0_1, webhookMaxFailures: 3 });
    const sessionId = "s-disable";
    const registered = await call(g.url, "POST", "/v1/webhooks", {
      body: { url: target.base, events: ["*"], sessionId },
    });
    const id = registered.body.id as string;
    const seqs = await publishEvents(js, PARTITIONS, sessionId, [
      { type: "custom", data: 1 },
      { type: "custom", data: 2 },
    ]);
    const detail = async () => (await call(g.url, "GET", `/v1/webhooks/${id}`)).body;
    await expect.poll(async () => (await detail()).state, { timeout: 10_000 }).toBe("disabled");
    const disabled = await detail();
    expect(disabled).toMatchObject({
      id,
      state: "disabled",
      disabledReason: expect.stringMatching(/^3 failed attempts in a row; the last: receiver is down for maintenance/),
      disabledAt: expect.any(Number),
      status: { delivered: 0, failed: 3, consecutiveFailures: 3 },
    });
    expect(
      disabled.status.lastFailures.map((a: { seq: number; attempt: number; status: number }) => [
        a.seq,
        a.attempt,
        a.status,
      ]),
    ).toEqual([
      [seqs[0], 3, 503],
      [seqs[0], 2, 503],
      [seqs[0], 1, 503],
    ]);
    expect((await call(g.url, "GET", "/v1/webhooks")).body.webhooks).toEqual([
      expect.objectContaining({ id, state: "disabled" }),
    ]);
    // Disabled: nothing more is tried.
    const tried = target.requests.length;
    await new Promise((r) => setTimeout(r, 500));
    expect(target.requests.length).toBe(tried);

    failing = false;
    const enabled = await call(g.url, "POST", `/v1/webhooks/${id}/enable`);
    expect(enabled.status).toBe(200);
    expect(enabled.body).toMatchObject({ state: "active", status: { consecutiveFailures: 0 } });
    expect(enabled.body.disabledReason).toBeUndefined();
    await expect.poll(() => target.requests.filter((r) => r.seq === seqs[1]).length, { timeout: 10_000 }).toBe(1);
    // Every attempt of the first event carried its sequence as the Idempotency-Key.
    expect(target.requests.map((r) => [r.seq, r.headers["idempotency-key"]])).toEqual([
      ...Array.from({ length: tried + 1 }, () => [seqs[0], String(seqs[0])]),
      [seqs[1], String(seqs[1])],
    ]);
    await expect.poll(async () => (await detail()).status.delivered).toBe(2);
    const after = await detail();
    expect(after).toMatchObject({ state: "active", status: { delivered: 2, failed: 3, consecutiveFailures: 0 } });
    expect(after.status.lastDeliveries[0]).toMatchObject({ seq: seqs[1], outcome: "ok", status: 200 });
    expect((await call(g.url, "POST", "/v1/webhooks/wh-nope/enable")).status).toBe(404);
    await call(g.url, "DELETE", `/v1/webhooks/${id}`);
  });
});
