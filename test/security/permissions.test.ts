// The whole stack on a real nats-server with the generated accounts: every service logs in as its own
// user and does its job; then each role tries a subject that is not its own and the server refuses it.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient, isFleetError, type SessionEventItem } from "@fleet/client";
import {
  BUDGET_KEYS,
  bytesToBase64,
  encodeCommand,
  KV_BUCKETS,
  type SessionEntry,
  SPEND_KEYS,
  STREAMS,
  subjects,
  TenantSpendRecord,
  utcDayOf,
} from "@fleet/protocol";
import { readKvEntries } from "@fleet/runtime";
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
import { Kvm } from "@nats-io/kv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../client/support/run-cli.js";
import { loginsOf, type SecuredNats, startSecuredNats, startTenantServices, type TenantServices } from "./support.js";

const TENANT = "acme";
const SESSION = "s-perm-1";

let secured: SecuredNats;
let redis: RedisServer;
let fake: FakeAnthropic;
let services: TenantServices;
let operator: FleetClient;
let workspace: string;
let events: SessionEventItem[];

/** The rejection of a request the server refused: its class name and message. */
async function refusal(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => "accepted",
    (err: Error) => `${err.name}: ${err.message}`,
  );
}

beforeAll(async () => {
  workspace = mkdtempSync(join(tmpdir(), "fleet-perm-ws-"));
  [secured, redis, fake] = await Promise.all([
    startSecuredNats([{ name: TENANT }, { name: "other" }]),
    startRedis(),
    startFakeAnthropic(),
  ]);
  fake.script(
    fakeReply([
      fakeText("Writing it."),
      fakeToolUse("write", { path: "notes.txt", content: "secured\n" }, { id: "toolu_w1" }),
    ]),
    fakeReply([fakeText("Reading it."), fakeToolUse("read", { path: "notes.txt" }, { id: "toolu_r1" })]),
    fakeReply("It says: secured"),
  );
  services = await startTenantServices(loginsOf(secured), TENANT, {
    redisUrl: redis.url,
    anthropicUrl: fake.url,
    workspace,
  });
  operator = await FleetClient.connect({ natsUrl: secured.nats.url, auth: secured.auth(TENANT, "operator") });
  const accepted = await operator.prompt(SESSION, { text: "write notes.txt, then read it" });
  events = [];
  for await (const item of operator.events(SESSION, { from: accepted.seq })) {
    events.push(item);
    if (item.event.type === "agent_end") break;
  }
}, 180_000);

afterAll(async () => {
  await operator?.close();
  await services?.stop();
  await Promise.all([secured?.stop(), redis?.stop(), fake?.stop()]);
  rmSync(workspace, { recursive: true, force: true });
});

describe("security / every service under its own user", () => {
  it("runs a prompt with tool calls to the end", () => {
    const tools = events
      .filter((i) => i.event.type === "tool_execution_end")
      .map((i) => [(i.event as { toolName: string }).toolName, (i.event as { isError: boolean }).isError]);
    expect(tools).toEqual([
      ["write", false],
      ["read", false],
    ]);
    expect(readFileSync(join(workspace, TENANT, SESSION, "notes.txt"), "utf8")).toBe("secured\n");
    expect(fake.requests).toHaveLength(3);
  });

  it("lets the store answer the operator's queries", async () => {
    const last = events.at(-1)?.seq ?? 0;
    const tree = await operator.getTree(SESSION, { minSeq: last });
    expect(tree.entries.map((e) => e.type)).toContain("message");
    expect(tree.seq).toBeGreaterThanOrEqual(last);
    const sessions = await operator.listSessions();
    expect(sessions.sessions.map((s) => s.sessionId)).toContain(SESSION);
  });

  it("carries an import over a message (parts and body by reference) through every role's permissions", async () => {
    // About 2 MB of entries and a 300 kB image: the image goes as a part, the rest as the body.
    const image = new Uint8Array(300_000).map((_, i) => (i * 7) % 256);
    const entries: SessionEntry[] = [];
    for (let i = 0; i < 200; i++) {
      const content: Array<{ type: "text"; text: string } | { type: "image"; data: string; mimeType: string }> = [
        { type: "text", text: `${i} `.repeat(5_000) },
      ];
      if (i === 0) content.push({ type: "image", data: bytesToBase64(image), mimeType: "image/png" });
      entries.push({
        type: "message",
        id: `m${i}`,
        parentId: i === 0 ? null : `m${i - 1}`,
        timestamp: 1_000 + i,
        message: { role: "user", content, timestamp: 1_000 + i },
      });
    }
    await operator.importSession({ entries, leafId: "m199" }, { sessionId: "s-perm-big" });
    const reader = await FleetClient.connect({ natsUrl: secured.nats.url, auth: secured.auth(TENANT, "reader") });
    try {
      await expect
        .poll(async () => (await reader.replay("s-perm-big")).tree.entries.length, { timeout: 30_000 })
        .toBe(200);
      const view = await reader.replay("s-perm-big");
      const first = view.tree.entries[0] as SessionEntry & { message: { content: Array<{ blob?: unknown }> } };
      expect(first.message.content[1]?.blob).toMatchObject({ bucket: "fleet_blobs", size: image.byteLength });
      const resolved = await reader.resolveBlobs(first.message);
      expect((resolved.content[1] as { data?: string }).data).toBe(bytesToBase64(image));
      // The store's export (over max_payload: a reply by reference in fleet_inputs) has the image inline.
      await reader.getTree("s-perm-big", { minSeq: view.seq });
      const exported = await reader.export("s-perm-big");
      expect(exported.length).toBeGreaterThan(1024 * 1024);
      expect(exported).toContain(bytesToBase64(image));
    } finally {
      await reader.close();
    }
  });

  it("schedules: an operator creates and triggers one, the loop's scheduler fires it under its own user; a reader may not create", async () => {
    fake.script(fakeReply("scheduled and secured"));
    const created = await operator.schedules.create({
      scheduleId: "sec-nightly",
      spec: { kind: "cron", cron: "0 3 * * *", timezone: "Asia/Tokyo" },
      target: { kind: "new_session", prompt: "nightly" },
    });
    expect(created.nextFires).toHaveLength(5);
    const { triggerId } = await operator.schedules.trigger("sec-nightly");
    await expect
      .poll(async () => (await operator.schedules.history("sec-nightly"))[0]?.event.type, { timeout: 20_000 })
      .toBe("schedule_fired");
    const sessionId = `sec-nightly-t-${triggerId}`;
    for await (const item of operator.events(sessionId)) if (item.event.type === "agent_end") break;
    const reader = await FleetClient.fromConnection((await secured.connectAs(TENANT, "reader")).nc);
    expect((await reader.schedules.get("sec-nightly")).counts.fired).toBe(1);
    await expect(reader.schedules.create({ ...created.definition, scheduleId: "sec-reader" })).rejects.toMatchObject({
      kind: "unavailable",
      code: "permission",
    });
    await expect(reader.schedules.remove("sec-nightly")).rejects.toMatchObject({ code: "permission" });
    await operator.schedules.remove("sec-nightly");
  });

  it("logged no permission violation in any service", () => {
    for (const s of [services.loop, services.tools, services.store]) {
      expect(s.output(), s.name).not.toContain("nats_permission_denied");
    }
  });

  it("lets a reader watch, replay and query, but not send a command", async () => {
    const denied: string[] = [];
    const reader = await FleetClient.connect({
      natsUrl: secured.nats.url,
      auth: secured.auth(TENANT, "reader"),
      onPermissionError: (line) => denied.push(line),
    });
    try {
      const replayed = await reader.replay(SESSION);
      expect(replayed.events).toBeGreaterThan(10);
      expect((await reader.getTree(SESSION)).leafId).toBe(replayed.tree.leafId);
      const sent = await reader.prompt(SESSION, { text: "not allowed" }).catch((e: unknown) => e);
      expect(isFleetError(sent) || sent instanceof Error).toBe(true);
      const subject = subjects.command(reader.partitionOf(SESSION), SESSION);
      expect(String((sent as Error).message)).toContain(subject);
      expect(denied).toContain(`NATS denied user "acme-reader" publish to "${subject}"`);
    } finally {
      await reader.close();
    }
  });
});

describe("security / the change feed", () => {
  it("lets a reader follow the store's notices: a change the operator makes comes as a frame naming its session", async () => {
    const denied: string[] = [];
    const reader = await FleetClient.connect({
      natsUrl: secured.nats.url,
      auth: secured.auth(TENANT, "reader"),
      onPermissionError: (line) => denied.push(line),
    });
    const ac = new AbortController();
    try {
      const iterator = reader.changes({ signal: ac.signal })[Symbol.asyncIterator]();
      const next = iterator.next(); // joins the feed
      await reader.nc.flush();
      await operator.setName(SESSION, "Followed by a reader");
      let named = false;
      const frames: unknown[] = [];
      for (let pending = next; !named && frames.length < 20; pending = iterator.next()) {
        const frame = await pending;
        if (frame.done) break;
        frames.push(frame.value);
        named = frame.value.sessions.includes(SESSION);
      }
      expect(named, JSON.stringify(frames)).toBe(true);
      expect(denied).toEqual([]);
    } finally {
      ac.abort();
      await reader.close();
    }
  });
});

describe("security / the change feed, refused", () => {
  it("ends a login's change feed with a clear error when it may not subscribe to the store's notices", async () => {
    const { nc } = await secured.connectAs(TENANT, "tools");
    try {
      const client = await FleetClient.fromConnection(nc, { partitions: 16, groups: 1 });
      // Asked twice on one client: each iteration is told.
      for (const attempt of [1, 2]) {
        const failure = await client
          .changes()
          [Symbol.asyncIterator]()
          .next()
          .catch((err: unknown) => err);
        expect(isFleetError(failure) && [failure.kind, failure.code], `attempt ${attempt}`).toEqual([
          "unavailable",
          "permission",
        ]);
        expect(String((failure as Error).message)).toContain("cannot follow the change feed");
      }
    } finally {
      await nc.close();
    }
  });
});

describe("security / ops servers", () => {
  it("listen on FLEET_OPS_HOST (every interface for the runner here), so probes from outside reach them", async () => {
    const port = services.toolsOpsPort.toString(16).toUpperCase().padStart(4, "0");
    const listening = readFileSync("/proc/net/tcp", "utf8")
      .split("\n")
      .filter((line) => line.includes(`:${port} `) && line.trim().split(/\s+/)[3] === "0A")
      .map((line) => line.trim().split(/\s+/)[1]);
    expect(listening).toEqual([`00000000:${port}`]);
    const ready = await fetch(`http://127.0.0.1:${services.toolsOpsPort}/readyz`);
    expect([ready.status, await ready.text()]).toEqual([200, "ready\n"]);
  });
});

describe("security / remote hooks", () => {
  it("lets a hook service answer the loop's hook requests and publish nothing else", async () => {
    const hooks = await secured.connectAs(TENANT, "hooks");
    const sub = hooks.nc.subscribe("fleet.hook.before_tool_call", {
      callback: (_err, msg) => {
        msg.respond(JSON.stringify({ block: false }));
      },
    });
    await hooks.nc.flush();
    const loop = await secured.connectAs(TENANT, "loop");
    const reply = await loop.nc.request("fleet.hook.before_tool_call", "{}", { timeout: 2_000 });
    expect(reply.json()).toEqual({ block: false });
    hooks.nc.publish("fleet.evt.0.s-hook");
    await hooks.nc.flush();
    for (let i = 0; i < 50 && hooks.denied.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(hooks.denied).toEqual(['NATS denied user "acme-hooks" publish to "fleet.evt.0.s-hook"']);
    sub.unsubscribe();
  });
});

describe("security / refused subjects", () => {
  it("refuses the loop consuming tool calls", async () => {
    const { nc, denied } = await secured.connectAs(TENANT, "loop");
    const pull = `$JS.API.CONSUMER.MSG.NEXT.${STREAMS.toolCalls.name}.tool-write`;
    const create = `$JS.API.CONSUMER.CREATE.${STREAMS.toolCalls.name}.sneaky`;
    expect(await refusal(nc.request(pull, JSON.stringify({ batch: 1 }), { timeout: 2_000 }))).toBe(
      `RequestError: Permissions Violation for Publish to "${pull}"`,
    );
    expect(await refusal(nc.request(create, "{}", { timeout: 2_000 }))).toBe(
      `RequestError: Permissions Violation for Publish to "${create}"`,
    );
    // Nor can it read the runners' replies, where pulled tool calls arrive.
    const sub = nc.subscribe("_INBOX_tools.>");
    const subError = await (async () => {
      try {
        for await (const _ of sub) return "message";
        return "closed";
      } catch (err) {
        return (err as Error).message;
      }
    })();
    expect(subError).toBe('Permissions Violation for Subscription to "_INBOX_tools.>"');
    // The status line may come a moment after the subscription's own error.
    for (let i = 0; i < 50 && denied.length < 3; i++) await new Promise((r) => setTimeout(r, 20));
    expect(denied).toEqual([
      `NATS denied user "acme-loop" publish to "${pull}"`,
      `NATS denied user "acme-loop" publish to "${create}"`,
      'NATS denied user "acme-loop" subscribe to "_INBOX_tools.>"',
    ]);
  });

  it("refuses a tool runner appending to FLEET_EVENTS", async () => {
    const { nc, denied } = await secured.connectAs(TENANT, "tools");
    const subject = subjects.event(0, "s-forged");
    const answer = await refusal(jetstream(nc).publish(subject, JSON.stringify({ type: "agent_end" })));
    expect(answer).toBe(`RequestError: Permissions Violation for Publish to "${subject}"`);
    expect(denied).toEqual([`NATS denied user "acme-tools" publish to "${subject}"`]);
    const jsm = await jetstreamManager((await secured.connectAs(TENANT, "reader")).nc);
    const stored = await jsm.streams.getMessage(STREAMS.events.name, { last_by_subj: subject }).catch(() => null);
    expect(stored).toBeNull();
  });

  it("refuses a read-only client sending a command, and pulling the store's consumer", async () => {
    const { nc, denied } = await secured.connectAs(TENANT, "reader");
    const command = encodeCommand({ type: "abort", id: "c-reader-1", sessionId: SESSION });
    if (!command.ok) throw new Error(command.error);
    const subject = subjects.command(0, SESSION);
    expect(await refusal(jetstream(nc).publish(subject, command.bytes))).toBe(
      `RequestError: Permissions Violation for Publish to "${subject}"`,
    );
    const pull = `$JS.API.CONSUMER.MSG.NEXT.${STREAMS.events.name}.store-g0`;
    expect(await refusal(nc.request(pull, JSON.stringify({ batch: 1 }), { timeout: 2_000 }))).toBe(
      `RequestError: Permissions Violation for Publish to "${pull}"`,
    );
    expect(denied).toEqual([
      `NATS denied user "acme-reader" publish to "${subject}"`,
      `NATS denied user "acme-reader" publish to "${pull}"`,
    ]);
  });

  it("budgets: the loop wrote the session's spend record; an operator sets the daily limits; a reader and the loop may not", async () => {
    const bucket = KV_BUCKETS.budgets.name;
    const operatorKvm = new Kvm((await secured.connectAs(TENANT, "operator")).nc);
    const asOperator = await operatorKvm.open(bucket);
    const spend = await operatorKvm.open(KV_BUCKETS.spend.name);
    const record = await spend.get(SPEND_KEYS.session(utcDayOf(Date.now()), SESSION));
    expect(TenantSpendRecord.parse(record?.json()).outputTokens).toBeGreaterThan(0);
    // Every client reads the day's totals; only the loop writes them.
    const totalsKv = await operatorKvm.open(KV_BUCKETS.spendTotals.name);
    const totals = await readKvEntries(totalsKv, SPEND_KEYS.totalsAll);
    expect(totals.length).toBeGreaterThan(0);
    const total = `$KV.${KV_BUCKETS.spendTotals.name}.${totals[0]?.key}`;
    expect(await refusal(totalsKv.put(totals[0]?.key ?? "", "{}"))).toBe(
      `RequestError: Permissions Violation for Publish to "${total}"`,
    );
    await asOperator.put(BUDGET_KEYS.limits, JSON.stringify({ costUsd: 100 }));
    expect((await asOperator.get(BUDGET_KEYS.limits))?.json()).toEqual({ costUsd: 100 });

    const reader = await secured.connectAs(TENANT, "reader");
    const limits = `$KV.${bucket}.${BUDGET_KEYS.limits}`;
    expect(await refusal(new Kvm(reader.nc).open(bucket).then((kv) => kv.put(BUDGET_KEYS.limits, "{}")))).toBe(
      `RequestError: Permissions Violation for Publish to "${limits}"`,
    );
    const loop = await secured.connectAs(TENANT, "loop");
    expect(await refusal(new Kvm(loop.nc).open(bucket).then((kv) => kv.put(BUDGET_KEYS.limits, "{}")))).toBe(
      `RequestError: Permissions Violation for Publish to "${limits}"`,
    );
    await asOperator.delete(BUDGET_KEYS.limits);

    // The SDK's call (behind `fleet budget set` and `PUT /v1/budget`): an operator may, a reader is
    // told it may not.
    const operatorClient = await FleetClient.fromConnection((await secured.connectAs(TENANT, "operator")).nc);
    await operatorClient.setTenantLimits({ outputTokens: 5 });
    expect((await operatorClient.tenantBudget()).limits).toEqual({ outputTokens: 5 });
    // A misspelt limit is refused before anything is written, not dropped.
    await expect(operatorClient.setTenantLimits({ outputToken: 1 } as never)).rejects.toMatchObject({
      kind: "invalid_input",
      message: expect.stringContaining("outputToken"),
    });
    expect((await operatorClient.tenantBudget()).limits).toEqual({ outputTokens: 5 });
    const readerClient = await FleetClient.fromConnection(reader.nc);
    await expect(readerClient.setTenantLimits(null)).rejects.toMatchObject({ kind: "unavailable", code: "permission" });
    await operatorClient.setTenantLimits(null);
    expect((await readerClient.tenantBudget()).limits).toBeUndefined();
  });

  it("refuses a wrong password in one line naming the user", async () => {
    const error = await FleetClient.connect({
      natsUrl: secured.nats.url,
      auth: { user: "acme-operator", password: "wrong" },
      connectTimeoutMs: 2_000,
    }).catch((e: unknown) => e as Error);
    expect((error as Error).message).toBe(
      `NATS at ${secured.nats.url} refused the login of user "acme-operator": Authorization Violation`,
    );
    expect((error as Error).message).not.toContain("wrong");
  });

  it("the server logged each refusal with the user and subject", () => {
    const log = secured.nats.output();
    expect(log).toMatch(/Publish Violation - User "acme-tools", Subject "fleet\.evt\.0\.s-forged"/);
    expect(log).toMatch(/Subscription Violation - User "acme-loop", Subject "_INBOX_tools\.>"/);
  });
});

describe("security / the fleet CLI with credentials", () => {
  it("logs in with --user and --password", async () => {
    const { password } = secured.auth(TENANT, "operator");
    const result = await runCli([
      "--nats",
      secured.nats.url,
      "--user",
      "acme-operator",
      "--password",
      password ?? "",
      "tree",
      SESSION,
      "--json",
    ]);
    expect([result.code, result.stderr]).toEqual([0, ""]);
    expect((JSON.parse(result.stdout) as { entries: unknown[] }).entries.length).toBeGreaterThan(3);
  });

  it("reports a reader's refused command in one line naming the user and subject", async () => {
    const result = await runCli(["abort", SESSION], {
      env: { NATS_URL: secured.nats.url, ...secured.env(TENANT, "reader") },
    });
    const subject = subjects.command(operator.partitionOf(SESSION), SESSION);
    expect(result.code).not.toBe(0);
    expect(result.stderr.split("\n")[0]).toBe(`fleet: NATS denied user "acme-reader" publish to "${subject}"`);
  });

  it("shows no secret in fleet doctor's output", async () => {
    const env = { NATS_URL: secured.nats.url, REDIS_URL: redis.url, ...secured.env(TENANT, "reader") };
    const result = await runCli(["doctor"], { env });
    const output = result.stdout + result.stderr;
    expect(output).toContain(`NATS ${secured.nats.url} (user "acme-reader" with a password): nats-server 2.9.10`);
    expect(output).toContain("loop leases: 4/4 held");
    // A reader may write the storage probe (and nothing else of fleet_config).
    expect(output).toMatch(/✓ storage: [\d.]+ MB used of [\d.]+ MB \(account limit\); writes accepted/);
    expect(output).not.toContain(env.NATS_PASSWORD);
    const json = await runCli(["doctor", "--json"], { env });
    expect(json.stdout).not.toContain(env.NATS_PASSWORD);
  });

  it("archives, restores and deletes a session with every service under its own user", async () => {
    const archived = await operator.archiveSession(SESSION);
    expect(archived).toMatchObject({ type: "session_archived", sessionId: SESSION });
    const restored = await operator.restoreSession(SESSION);
    expect(restored.events).toBe(archived.events);
    const deleted = await operator.deleteSession(SESSION);
    expect(deleted.type).toBe("session_deleted");
    expect(await operator.lastSeq(SESSION)).toBe(0);
    await expect.poll(() => existsSync(join(workspace, TENANT, SESSION))).toBe(false);
    for (const s of [services.loop, services.tools, services.store]) {
      expect(s.output(), s.name).not.toContain("nats_permission_denied");
    }
  });
});
