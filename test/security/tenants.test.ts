// Two tenants on one nats-server (one account each) and one Redis: with the same session id, a client
// of one tenant cannot read, command, query or see the tool calls of the other. An audit account
// mirrors one tenant's events read-only.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient, isFleetError, type SessionEventItem } from "@fleet/client";
import { STREAMS, subjects } from "@fleet/protocol";
import {
  type FakeAnthropic,
  fakeReply,
  fakeText,
  fakeToolUse,
  type RedisServer,
  startFakeAnthropic,
  startRedis,
} from "@fleet/testkit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { Msg } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../client/support/run-cli.js";
import {
  loginsOf,
  PARTITIONS,
  type SecuredNats,
  startSecuredNats,
  startTenantServices,
  type TenantServices,
} from "./support.js";

const SHARED = "s-shared";
const GLOBEX_ONLY = "s-globex-only";

let secured: SecuredNats;
let redis: RedisServer;
const fakes: FakeAnthropic[] = [];
const services: TenantServices[] = [];
let workspace: string;
let acme: FleetClient;
let globex: FleetClient;
/** Tool-result records the acme loop user saw on `fleet.tool.result.>` while both tenants ran. */
const acmeSawResults: string[] = [];

async function runToEnd(client: FleetClient, sessionId: string, text: string): Promise<SessionEventItem[]> {
  const accepted = await client.prompt(sessionId, { text });
  const items: SessionEventItem[] = [];
  for await (const item of client.events(sessionId, { from: accepted.seq })) {
    items.push(item);
    if (item.event.type === "agent_end") break;
  }
  return items;
}

const finalText = (items: SessionEventItem[]) =>
  JSON.stringify(items.filter((i) => i.event.type === "message_end").at(-1)?.event);

beforeAll(async () => {
  workspace = mkdtempSync(join(tmpdir(), "fleet-tenants-ws-"));
  [secured, redis] = await Promise.all([
    startSecuredNats([{ name: "acme", audit: true }, { name: "globex" }]),
    startRedis(),
  ]);
  for (const name of ["acme", "globex"]) {
    const fake = await startFakeAnthropic();
    fake.script(
      fakeReply([
        fakeText(`${name} writes.`),
        fakeToolUse("write", { path: "who.txt", content: `${name}\n` }, { id: `toolu_${name}` }),
      ]),
      fakeReply(`done for ${name}`),
      fakeReply(`second run for ${name}`),
    );
    fakes.push(fake);
  }
  const started = await Promise.all(
    ["acme", "globex"].map((tenant, i) =>
      startTenantServices(loginsOf(secured), tenant, {
        redisUrl: redis.url,
        anthropicUrl: fakes[i]?.url ?? "",
        workspace,
      }),
    ),
  );
  services.push(...started);
  const { nc } = await secured.connectAs("acme", "loop");
  nc.subscribe(subjects.toolResultsAll, {
    callback: (_e, m: Msg) => {
      acmeSawResults.push(m.subject);
    },
  });
  acme = await FleetClient.connect({ natsUrl: secured.nats.url, auth: secured.auth("acme", "operator") });
  globex = await FleetClient.connect({ natsUrl: secured.nats.url, auth: secured.auth("globex", "operator") });
  await Promise.all([runToEnd(acme, SHARED, "who are you"), runToEnd(globex, SHARED, "who are you")]);
  // A second globex session, unknown to acme.
  await runToEnd(globex, GLOBEX_ONLY, "again");
}, 240_000);

afterAll(async () => {
  await acme?.close();
  await globex?.close();
  await Promise.all(services.map((s) => s.stop()));
  await Promise.all([secured?.stop(), redis?.stop(), ...fakes.map((f) => f.stop())]);
  rmSync(workspace, { recursive: true, force: true });
});

describe("tenants / one account each", () => {
  it("ran both tenants' sessions with the same id apart, in their own workspaces", async () => {
    expect(readFileSync(join(workspace, "acme", SHARED, "who.txt"), "utf8")).toBe("acme\n");
    expect(readFileSync(join(workspace, "globex", SHARED, "who.txt"), "utf8")).toBe("globex\n");
    expect(finalText(await eventsOf(acme, SHARED))).toContain("done for acme");
    expect(finalText(await eventsOf(globex, SHARED))).toContain("done for globex");
  });

  it("gives each account its own JetStream limits", async () => {
    for (const [tenant, client] of [
      ["acme", acme],
      ["globex", globex],
    ] as const) {
      const info = await client.jsm.getAccountInfo();
      expect(info.limits.max_streams, tenant).toBe(24);
      expect(info.limits.max_consumers, tenant).toBe(256);
      expect(info.limits.max_storage, tenant).toBe(1024 ** 3);
    }
  });

  it("does not let acme read globex's events, even with globex's session ids", async () => {
    const mine = await eventsOf(acme, SHARED);
    expect(JSON.stringify(mine)).not.toContain("globex");
    expect(await acme.lastSeq(GLOBEX_ONLY)).toBe(0);
    expect((await acme.replay(GLOBEX_ONLY)).events).toBe(0);
    expect(await globex.lastSeq(GLOBEX_ONLY)).toBeGreaterThan(0);
  });

  it("does not let acme query globex's store (one Redis, keys per tenant)", async () => {
    const error = await acme.getTree(GLOBEX_ONLY).catch((e: unknown) => e);
    expect(isFleetError(error) && [error.kind, error.code]).toEqual(["store", "not_found"]);
    expect((await globex.getTree(GLOBEX_ONLY)).entries.length).toBeGreaterThan(0);
    const acmeSessions = (await acme.listSessions()).sessions.map((s) => s.sessionId);
    expect(acmeSessions).toEqual([SHARED]);
  });

  it("does not let acme's commands reach globex", async () => {
    const before = await globex.lastSeq(GLOBEX_ONLY);
    const sent = await acme.abort(GLOBEX_ONLY).catch((e: unknown) => e);
    // acme's own loop answers: in acme's account the session does not exist.
    expect(isFleetError(sent) && sent.code).toBe("not_found");
    expect(await globex.lastSeq(GLOBEX_ONLY)).toBe(before);
  });

  it("does not show acme globex's tool calls", async () => {
    expect(acmeSawResults.length).toBeGreaterThan(0);
    expect(acmeSawResults.every((s) => s === acmeSawResults[0])).toBe(true);
    expect(acmeSawResults[0]).toBe(subjects.toolResult(SHARED, "toolu_acme"));
    const calls = await acme.jsm.streams.info(STREAMS.toolResults.name, { subjects_filter: ">" });
    expect(Object.keys(calls.state.subjects ?? {})).toEqual([subjects.toolResult(SHARED, "toolu_acme")]);
  });
});

describe("tenants / audit feed", () => {
  let auditor: FleetClient;
  const auditorDenied: string[] = [];

  beforeAll(async () => {
    const created = await runCli(["audit-feed", "acme"], {
      env: { NATS_URL: secured.nats.url, ...secured.env("acme", "audit-admin") },
    });
    expect([created.code, created.stderr]).toEqual([0, ""]);
    expect(created.stdout).toMatch(/^audit feed of acme: mirror created, \d+ events so far\n$/);
    auditor = await FleetClient.connect({
      natsUrl: secured.nats.url,
      auth: secured.auth("acme", "auditor"),
      partitions: PARTITIONS,
      onPermissionError: (line) => auditorDenied.push(line),
    });
  });

  afterAll(async () => {
    await auditor?.close();
  });

  it("lets the auditor replay acme's whole history, new events included", async () => {
    await runToEnd(acme, SHARED, "once more");
    const want = await acme.replay(SHARED);
    let got = await auditor.replay(SHARED);
    // The mirror follows within moments; a failed first consumer create is retried by the server.
    for (let i = 0; i < 300 && got.seq < want.seq; i++) {
      await new Promise((r) => setTimeout(r, 100));
      got = await auditor.replay(SHARED);
    }
    const mirror = await auditor.jsm.streams.info(STREAMS.events.name);
    expect(got.events, JSON.stringify({ mirror: mirror.mirror, state: mirror.state })).toBe(want.events);
    expect(got.tree).toEqual(want.tree);
    expect(JSON.stringify(await eventsOf(auditor, SHARED))).toContain("second run for acme");
  });

  it("shows the auditor nothing of globex", async () => {
    // Under that id acme's log holds only acme's own rejection of the abort it sent there.
    const types = (await eventsOf(auditor, GLOBEX_ONLY)).map((i) => i.event.type);
    expect(types).toContain("command_rejected");
    expect(types).not.toContain("message_end");
    expect(JSON.stringify(await eventsOf(auditor, SHARED))).not.toContain("globex");
  });

  it("lets the auditor write nothing", async () => {
    const attempts: [string, () => Promise<unknown>][] = [
      ["command", () => auditor.abort(SHARED)],
      ["event", () => jetstream(auditor.nc).publish(subjects.event(0, SHARED), "{}")],
      [
        "consumer on acme's stream",
        () => auditor.nc.request("$JS.acme.API.CONSUMER.CREATE.FLEET_EVENTS", "{}", { timeout: 2_000 }),
      ],
      ["stream delete", () => auditor.jsm.streams.delete(STREAMS.events.name)],
      ["stream purge", () => auditor.jsm.streams.purge(STREAMS.events.name)],
      ["mirror create", () => auditor.jsm.streams.add({ name: "AUDIT_COPY", subjects: ["x.>"] })],
    ];
    for (const [what, attempt] of attempts) {
      const outcome = await attempt().then(
        () => "accepted",
        (e: Error) => e.message,
      );
      expect(outcome, what).toMatch(/Permissions Violation for Publish to/);
    }
    const jsm = await jetstreamManager((await secured.connectAs("acme", "reader")).nc);
    expect((await jsm.streams.info(STREAMS.events.name)).config.name).toBe(STREAMS.events.name);
    expect(auditorDenied.map((l) => l.replace(/ to ".*"$/, ""))).toEqual(
      Array(attempts.length).fill('NATS denied user "acme-auditor" publish'),
    );
  });
});

async function eventsOf(client: FleetClient, sessionId: string): Promise<SessionEventItem[]> {
  const last = await client.lastSeq(sessionId);
  const items: SessionEventItem[] = [];
  if (last === 0) return items;
  for await (const item of client.events(sessionId, { from: "start" })) {
    items.push(item);
    if (item.seq >= last) break;
  }
  return items;
}
