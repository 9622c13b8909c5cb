// The one-shot commands against a real nats-server and the fake loop (no session store running).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient } from "@fleet/client";
import { BUDGET_KEYS, KV_BUCKETS, SPEND_KEYS, storeAppliedNotices, subjects, utcDayOf } from "@fleet/protocol";
import { connectNats } from "@fleet/runtime";
import type { NatsServer } from "@fleet/testkit";
import { Kvm } from "@nats-io/kv";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { FAKE_RUN_TYPES, type FakeLoop, type FakeLoopServer, startFakeLoopServer } from "./support/fake-loop.js";
import { collect, runCli, spawnCli, waitForOutput } from "./support/run-cli.js";

let server: NatsServer;
let stack: FakeLoopServer;
let loop: FakeLoop;
let client: FleetClient;
let dir: string;

const run = (args: string[]) =>
  runCli(args, { cwd: dir, env: { FLEET_HOME: join(dir, ".fleet"), NATS_URL: server.url } });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fleet-cli-commands-"));
  stack = await startFakeLoopServer();
  ({ server, loop } = stack);
  client = await FleetClient.connect({ natsUrl: server.url });
});

afterAll(async () => {
  await client?.close();
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("fleet prompt", () => {
  it("--json prints the run's raw events as NDJSON until agent_end", async () => {
    const result = await run(["prompt", "--json", "-s", "s-cli-json", "hello", "there"]);
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const lines = result.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as { seq: number; event: { type: string } });
    expect(lines.map((l) => l.event.type)).toEqual(FAKE_RUN_TYPES);
    const stored = await client.replay("s-cli-json");
    expect(lines.map((l) => l.seq)).toEqual(Array.from({ length: 12 }, (_, i) => stored.seq - 11 + i));
    expect(loop.commands.find((c) => c.sessionId === "s-cli-json")).toMatchObject({
      type: "prompt",
      text: "hello there",
    });
  });

  it("streams the reply as text and prints a new session's id on stderr", async () => {
    const result = await run(["prompt", "hi"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^session s-[a-z0-9]+\n$/);
    expect(result.stdout).toBe("echo: hi\n");
  });

  it("a rejected prompt is one line and exit code 1", async () => {
    const result = await run(["prompt", "-s", "s-cli-reject", "reject", "me"]);
    expect([result.code, result.stdout, result.stderr]).toEqual([
      1,
      "",
      "fleet: prompt rejected (invalid): rejected on request\n",
    ]);
  });
});

describe("fleet steer / follow-up / abort", () => {
  it("reports each accepted command with its sequence", async () => {
    const steer = await run(["steer", "s-cli-q", "go", "left"]);
    const follow = await run(["follow-up", "s-cli-q", "and", "then"]);
    const abort = await run(["abort", "s-cli-q"]);
    const seqs = (await client.replay("s-cli-q")).seq;
    expect([steer.stdout, follow.stdout, abort.stdout]).toEqual([
      `✓ steer accepted (seq ${seqs - 2})\n`,
      `✓ follow_up accepted (seq ${seqs - 1})\n`,
      `✓ abort accepted (seq ${seqs})\n`,
    ]);
    const sent = loop.commands
      .filter((c) => c.sessionId === "s-cli-q")
      .map((c) => [c.type, "text" in c ? c.text : undefined]);
    expect(sent).toEqual([
      ["steer", "go left"],
      ["follow_up", "and then"],
      ["abort", undefined],
    ]);
  });
});

describe("fleet watch / replay / tree / fork", () => {
  it("watch --json follows from a sequence until Ctrl-C", async () => {
    await run(["prompt", "-s", "s-cli-watch", "one"]);
    const third = (await client.replay("s-cli-watch")).seq - 9;
    const child = spawnCli(["watch", "s-cli-watch", "--from", String(third), "--json"], {
      cwd: dir,
      env: { FLEET_HOME: join(dir, ".fleet"), NATS_URL: server.url },
    });
    const done = collect(child, 20_000);
    await waitForOutput(child, /"agent_end"/);
    child.kill("SIGINT");
    const result = await done;
    expect(result.code).toBe(0);
    const types = result.stdout
      .trimEnd()
      .split("\n")
      .map((l) => (JSON.parse(l) as { event: { type: string } }).event.type);
    expect(types).toEqual(FAKE_RUN_TYPES.slice(2));
  });

  it("changes --json prints the change feed's frames until Ctrl-C", async () => {
    const child = spawnCli(["changes", "--json"], {
      cwd: dir,
      env: { FLEET_HOME: join(dir, ".fleet"), NATS_URL: server.url },
    });
    const done = collect(child, 20_000);
    // The store's notice that its indexes took in a batch (no store runs here): sent until the
    // command, which subscribes once connected, prints its frame.
    const store = await connectNats({ url: server.url, name: "cli-changes-store" });
    const notice = new TextEncoder().encode(JSON.stringify(storeAppliedNotices(0, 5, ["s-cli-chg"], false)[0]));
    const sending = setInterval(() => store.publish(subjects.storeApplied(0), notice), 200);
    try {
      await waitForOutput(child, /s-cli-chg/);
    } finally {
      clearInterval(sending);
      await store.close();
    }
    child.kill("SIGINT");
    const result = await done;
    expect(result.code).toBe(0);
    const first = JSON.parse(result.stdout.trimEnd().split("\n")[0] ?? "{}");
    expect(first).toEqual({ sessions: ["s-cli-chg"], approvals: false, all: false });
  });

  it("replay --to a mid-run sequence shows the run in progress", async () => {
    await run(["prompt", "-s", "s-cli-replay", "abc"]);
    const all = await client.replay("s-cli-replay");
    const midSeq = all.seq - 4; // the first message_update
    const result = await run(["replay", "s-cli-replay", "--to", String(midSeq), "--json"]);
    expect(result.code).toBe(0);
    const json = JSON.parse(result.stdout) as {
      seq: number;
      events: number;
      agent: { isStreaming: boolean; messages: unknown[]; streamingMessage: { content: unknown[] } };
      tree: { entries: unknown[] };
    };
    expect([
      json.seq,
      json.events,
      json.agent.isStreaming,
      json.agent.messages.length,
      json.tree.entries.length,
    ]).toEqual([midSeq, 8, true, 1, 1]);
    expect(json.agent.streamingMessage.content).toEqual([{ type: "text", text: "echo:" }]);

    const text = await run(["replay", "s-cli-replay"]);
    expect(text.stdout).toContain(`session s-cli-replay at seq ${all.seq} (12 events)`);
    expect(text.stdout).toContain('  assistant: "echo: abc"');
    expect(text.stdout).toContain("spend: session in 7 · out 3 · $0.0001   last run in 7 · out 3 · $0.0001\n");
    expect(text.stdout).toContain("budget: run none   session none\n");
  });

  it("tree draws the branch with the leaf marked (folded from the log without a store)", async () => {
    await run(["prompt", "-s", "s-cli-tree", "first"]);
    const replayed = await client.replay("s-cli-tree");
    const [user, assistant] = replayed.tree.entries;
    const result = await run(["tree", "s-cli-tree"]);
    expect(result.code).toBe(0);
    expect(result.stdout.split("\n")).toEqual([
      `session s-cli-tree at seq ${replayed.seq} (no session store answered: folded from the log)`,
      `● ${user?.id.slice(-8)} user: "first"`,
      `● ${assistant?.id.slice(-8)} assistant: "echo: first" ◀ leaf`,
      "",
    ]);
  });

  it("fork resolves a short entry id and creates the new session with forkFrom", async () => {
    await run(["prompt", "-s", "s-cli-fork", "root"]);
    const entries = (await client.replay("s-cli-fork")).tree.entries;
    const target = entries[0]?.id as string;
    const result = await run(["fork", "s-cli-fork", target.slice(-8), "--session", "s-cli-forked"]);
    expect([result.code, result.stdout, result.stderr]).toEqual([0, "s-cli-forked\n", ""]);
    expect(loop.commands.find((c) => c.sessionId === "s-cli-forked")).toMatchObject({
      type: "create_session",
      forkFrom: { sessionId: "s-cli-fork", entryId: target },
    });
  });

  it("sessions without a running store is one line and exit code 1", async () => {
    const result = await run(["sessions"]);
    expect([result.code, result.stdout, result.stderr]).toEqual([
      1,
      "",
      "fleet: list_sessions: no session store is running (no responders on fleet.store.list_sessions)\n",
    ]);
  });
});

describe("fleet budget", () => {
  it("sets, shows and clears the tenant's daily limits, with today's spend by session", async () => {
    const day = utcDayOf(Date.now());
    const nc = await connectNats({ url: server.url, name: "cli-budget-test" });
    onTestFinished(() => nc.close());
    const kv = await new Kvm(nc).open(KV_BUCKETS.budgets.name);
    const record = {
      sessionId: "s-cli-spend",
      day,
      events: 9,
      inputTokens: 120,
      outputTokens: 42,
      totalTokens: 162,
      costUsd: 0.0123,
    };
    // What a loop worker writes when the session spends: its record and its partition's day total.
    const spendKv = await new Kvm(nc).open(KV_BUCKETS.spend.name);
    await spendKv.put(SPEND_KEYS.session(day, "s-cli-spend"), JSON.stringify(record));
    const spent = { inputTokens: 120, outputTokens: 42, totalTokens: 162, costUsd: 0.0123 };
    const totalsKv = await new Kvm(nc).open(KV_BUCKETS.spendTotals.name);
    await totalsKv.put(SPEND_KEYS.total(day, 3), JSON.stringify({ day, partition: 3, ...spent, pending: [] }));

    const set = await run(["budget", "set", "--output-tokens", "1000", "--cost", "2.5"]);
    expect([set.code, set.stdout, set.stderr]).toEqual([0, "tenant daily limits: out ≤ 1000, $ ≤ 2.5000\n", ""]);
    expect((await kv.get(BUDGET_KEYS.limits))?.json()).toEqual({ outputTokens: 1000, costUsd: 2.5 });
    expect((await client.tenantBudget()).limits).toEqual({ outputTokens: 1000, costUsd: 2.5 });

    const shown = await run(["budget"]);
    expect(shown.code).toBe(0);
    expect(shown.stdout.split("\n")).toEqual([
      `tenant budget ${day} (UTC)`,
      "  limits  out ≤ 1000, $ ≤ 2.5000",
      "  spent   in 120 · out 42 · $0.0123 (1 sessions)",
      "  s-cli-spend  in 120 · out 42 · $0.0123",
      "",
    ]);
    const json = JSON.parse((await run(["budget", "--json"])).stdout);
    expect(json).toEqual({
      day,
      limits: { outputTokens: 1000, costUsd: 2.5 },
      total: { inputTokens: 120, outputTokens: 42, totalTokens: 162, costUsd: 0.0123 },
      sessions: [{ sessionId: "s-cli-spend", inputTokens: 120, outputTokens: 42, totalTokens: 162, costUsd: 0.0123 }],
      deleted: { inputTokens: 0, outputTokens: 0, totalTokens: 0, costUsd: 0 },
    });
    const otherDay = JSON.parse((await run(["budget", "--json", "--day", "2001-02-03"])).stdout);
    expect(otherDay).toMatchObject({ day: "2001-02-03", sessions: [], total: { outputTokens: 0 } });

    const clear = await run(["budget", "clear"]);
    expect([clear.code, clear.stdout]).toEqual([0, "tenant daily limits: none\n"]);
    expect((await kv.get(BUDGET_KEYS.limits))?.operation).toBe("DEL");
    expect(JSON.parse((await run(["budget", "--json"])).stdout).limits).toBeNull();
    await spendKv.delete(SPEND_KEYS.session(day, "s-cli-spend"));
    await totalsKv.delete(SPEND_KEYS.total(day, 3));
  });

  it("refuses a set without limits, a bad amount and a bad day, with exit code 2", async () => {
    const none = await run(["budget", "set"]);
    expect([none.code, none.stdout]).toEqual([2, ""]);
    expect(none.stderr).toContain("give at least one limit");
    const cost = await run(["budget", "set", "--cost", "lots"]);
    expect([cost.code, cost.stderr]).toEqual([
      2,
      "fleet: option '--cost <usd>' argument 'lots' is invalid. must be a USD amount like 2.50\n",
    ]);
    const day = await run(["budget", "--day", "yesterday"]);
    expect(day.code).toBe(2);
    expect(day.stderr).toContain("must be a UTC day, YYYY-MM-DD");
  });
});
