// Retention (FLEET_RETENTION_DAYS) against the real stack, with archives in a directory
// (FLEET_ARCHIVE_DIR): the leased janitor archives the sessions that ended and stayed idle, in
// bounded batches with a log line and metrics each, leaves a running session alone, and an
// archived session comes back from the directory.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAnthropicStreamFn } from "@fleet/loop";
import { archiveNames, importPiJsonl, KV_BUCKETS, parseArchive } from "@fleet/protocol";
import { fakeReply, fakeText } from "@fleet/testkit";
import { Kvm } from "@nats-io/kv";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayStack, PARTITIONS, startGatewayStack, waitIdle } from "../gateway/support.js";
import { startTestWorker } from "../support/loop-harness.js";
import { startEndlessRun, storedEvents } from "./support.js";

const IDLE_MS = 2_000;
/** The janitor's lease in `fleet_leases` (PROTOCOL change 37). */
const JANITOR_KEY = "loop.janitor";
let stack: GatewayStack;
let archiveDir: string;
const lines: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  archiveDir = mkdtempSync(join(tmpdir(), "fleet-archive-"));
  const loopLogger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  stack = await startGatewayStack({
    lifecycle: {
      archiveDir,
      // The janitor's own timer is an hour away: the test runs its passes.
      retention: { days: IDLE_MS / 86_400_000, batchSize: 2, intervalMs: 3_600_000 },
    },
    loopLogger,
  });
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  rmSync(archiveDir, { recursive: true, force: true });
});

const counter = async (metric: { get(): Promise<{ values: Array<{ value: number; labels: object }> }> }) =>
  (await metric.get()).values;

describe("session lifecycle / retention", () => {
  it("archives the ended sessions idle for longer, in batches, and not a running one; they restore from the directory", async () => {
    const ended = ["lc-ret-1", "lc-ret-2", "lc-ret-3", "lc-ret-4", "lc-ret-5"];
    const histories = new Map<string, number>();
    for (const sid of ended) {
      stack.fake.script(fakeReply([fakeText(`kept ${sid}`)]));
      await stack.client.prompt(sid, "remember me");
      await waitIdle(stack.client, sid, 2);
      histories.set(sid, (await storedEvents(stack.client, sid)).length);
    }
    const running = "lc-ret-running";
    await startEndlessRun(stack, running);
    await new Promise((r) => setTimeout(r, IDLE_MS + 500));

    await stack.worker.retentionPass();

    for (const sid of ended) {
      const record = await stack.client.lifecycleRecord(sid);
      expect(record).toMatchObject({ type: "session_archived", events: histories.get(sid) });
      expect(record?.by).toMatch(/^retention \(FLEET_RETENTION_DAYS=/);
      const names = archiveNames(sid);
      const archive = parseArchive(readFileSync(join(archiveDir, names.events), "utf8"));
      expect(archive.ok && archive.value.events.length).toBe(histories.get(sid));
      expect(importPiJsonl(readFileSync(join(archiveDir, names.pi), "utf8")).ok).toBe(true);
      expect(await stack.client.lastSeq(sid)).toBe(0);
    }
    expect(await stack.client.lifecycleRecord(running)).toBeNull();
    expect(await stack.client.lastSeq(running)).toBeGreaterThan(0);

    const batches = lines.filter((l) => l.evt === "retention_batch");
    expect(batches.map((b) => [b.candidates, b.archived, b.rejected, b.pending])).toEqual([
      [2, 2, 0, 0],
      [2, 2, 0, 0],
      [1, 1, 0, 0],
    ]);
    expect((await counter(stack.worker.metrics.retentionBatches))[0]?.value).toBe(3);
    const sessions = await counter(stack.worker.metrics.retentionSessions);
    expect(sessions.find((v) => (v.labels as { outcome?: string }).outcome === "archived")?.value).toBe(5);

    // A second pass finds nothing more to do.
    await stack.worker.retentionPass();
    expect(lines.filter((l) => l.evt === "retention_batch")).toHaveLength(3);

    const back = await stack.client.restoreSession("lc-ret-3");
    expect(back).toMatchObject({ type: "session_restored", events: histories.get("lc-ret-3") });
    expect(back.type === "session_restored" && back.archive.store).toBe("directory");
    await expect.poll(() => existsSync(join(archiveDir, archiveNames("lc-ret-3").events))).toBe(false);
    const restored = await stack.client.replay("lc-ret-3");
    expect(restored.agent.messages.map((m) => m.role)).toEqual(["user", "assistant"]);

    await stack.client.abort(running);
  });

  it("runs on one loop worker per tenant: the holder of the lease loop.janitor", async () => {
    const second = await startTestWorker({
      url: stack.nats.url,
      workerId: "zz-loop-second",
      partitions: PARTITIONS,
      // It takes over some partitions, so it answers prompts like the stack's worker.
      providers: { anthropic: createAnthropicStreamFn({ apiKey: "sk-test", baseURL: stack.fake.url, maxRetries: 0 }) },
      defaultProvider: "anthropic",
      lifecycle: { retention: { days: IDLE_MS / 86_400_000, batchSize: 2, intervalMs: 3_600_000 } },
    });
    try {
      const leases = await new Kvm(stack.client.nc).open(KV_BUCKETS.leases.name);
      const holder = JSON.parse((await leases.get(JANITOR_KEY))?.string() ?? "{}") as { workerId?: string };
      expect(holder.workerId).not.toBe("zz-loop-second");
      stack.fake.script(fakeReply([fakeText("idle soon")]));
      await stack.client.prompt("lc-ret-6", "hello");
      await waitIdle(stack.client, "lc-ret-6", 2);
      await new Promise((r) => setTimeout(r, IDLE_MS + 500));
      await second.worker.retentionPass();
      expect(await stack.client.lifecycleRecord("lc-ret-6")).toBeNull();
      await stack.worker.retentionPass();
      expect((await stack.client.lifecycleRecord("lc-ret-6"))?.type).toBe("session_archived");
    } finally {
      await second.worker.stop();
      await second.nc.close();
    }
  });
});
