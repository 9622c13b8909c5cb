// A crash at every step of a delete, an archive and a restore: the loop worker doing it (a real
// process, stopped at the step by FLEET_LIFECYCLE_HALT_AFTER) is SIGKILLed, and the next holder of
// its partitions (the file's one other worker, which never halts) finishes it from the log. Nothing is lost (the archive, the restored history and the ledger are
// exact) and nothing is left half-done (no events, tool results, blobs, spend records, projection
// or workspace of a deleted session; one lifecycle record; no pending ledger operation).
// LIFECYCLE_LOG_DIR=<dir> keeps each loop worker's log there.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient, type LifecycleOptions } from "@fleet/client";
import {
  archiveNames,
  DELETION_STEPS,
  type FleetEvent,
  OBJECT_STORES,
  parseArchive,
  partitionOf,
  RESTORE_STEPS,
  STREAMS,
  subjects,
  utcDayOf,
} from "@fleet/protocol";
import { applyTopology, connectNats, createLogger } from "@fleet/runtime";
import { type StoreService, startStoreService } from "@fleet/session-store";
import { type NatsServer, type RedisServer, startNats, startRedis } from "@fleet/testkit";
import { builtinTools, createToolRunner, type ToolRunner } from "@fleet/tools";
import { Objm } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { waitIdle } from "../gateway/support.js";
import { loopLeaseHolders } from "../support/loop-process.js";
import { type ServiceProcess, spawnService } from "../support/service-process.js";
import {
  blobNamesIn,
  countedSpend,
  eventually,
  ledgerOf,
  leftovers,
  messagesOn,
  NOTHING_LEFT,
  storedEvents,
} from "./support.js";

const PARTITIONS = 4;
const TTL = 1_000;
const silent = createLogger("lifecycle-crash", { level: process.env.LOG_LEVEL ?? "silent" });
let nats: NatsServer;
let redis: RedisServer;
let store: StoreService;
let runnerNc: NatsConnection;
let runner: ToolRunner;
let client: FleetClient;
let dir: string;
let workspace: string;
/** The worker that takes over each halted worker's partitions; it runs for the whole file. */
let finisher: ServiceProcess;
const procs: ServiceProcess[] = [];

beforeAll(async () => {
  nats = await startNats();
  redis = await startRedis();
  const setup = await connectNats({ url: nats.url, name: "lifecycle-crash-setup" });
  await applyTopology(setup, { partitions: PARTITIONS, leaseTtlMs: TTL });
  await setup.close();
  store = await startStoreService({
    natsUrl: nats.url,
    redisUrl: redis.url,
    prefix: "fleet:store",
    workerId: "store-lifecycle-crash",
    partitions: PARTITIONS,
    leaseTtlMs: TTL,
    opsPort: 0,
    cacheEntries: 100_000,
    maxBatch: 500,
    logger: silent,
  });
  dir = mkdtempSync(join(tmpdir(), "fleet-lifecycle-crash-"));
  workspace = join(dir, "workspaces");
  runnerNc = await connectNats({ url: nats.url, name: "lifecycle-crash-runner" });
  runner = createToolRunner({ nc: runnerNc, tools: builtinTools, workspaceRoot: workspace, logger: silent });
  const started = await runner.start();
  if (!started.ok) throw new Error(`tool runner did not start: ${JSON.stringify(started)}`);
  // Each session runs one bash call with a long output (a blob) that writes a file (its workspace).
  writeFileSync(
    join(dir, "script.json"),
    JSON.stringify({
      turns: [
        {
          content: [
            { type: "toolCall", id: "sh", name: "bash", arguments: { command: "seq 1 3000; echo kept > kept.txt" } },
          ],
        },
        { text: "done" },
      ],
    }),
  );
  client = await FleetClient.connect({ natsUrl: nats.url, name: "lifecycle-crash-client" });
  finisher = spawnLoop("loop-finisher");
  await finisher.waitForLog();
}, 60_000);

afterAll(async () => {
  for (const p of procs) p.proc.kill("SIGKILL");
  finisher?.proc.kill("SIGKILL");
  await client?.close();
  await runner?.stop({ graceMs: 0 });
  await runnerNc?.close();
  await store?.stop();
  await redis?.stop();
  await nats?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Stops every loop a test started (a failed test must not leave its worker to the next one). */
afterEach(async () => {
  for (const p of procs.splice(0)) {
    if (p.proc.exitCode === null && p.proc.signalCode === null) await sigkill(p);
  }
});

/** Starts a loop worker that halts at `haltAfter`; it is SIGKILLed after the test at the latest. */
function startLoop(workerId: string, haltAfter: string): ServiceProcess {
  const p = spawnLoop(workerId, haltAfter);
  procs.push(p);
  return p;
}

function spawnLoop(workerId: string, haltAfter = ""): ServiceProcess {
  return spawnService(
    "loop",
    {
      NATS_URL: nats.url,
      FLEET_WORKER_ID: workerId,
      FLEET_PROVIDER: "scripted",
      FLEET_SCRIPT: join(dir, "script.json"),
      FLEET_PARTITIONS: String(PARTITIONS),
      FLEET_LEASE_TTL_MS: String(TTL),
      FLEET_COALESCE_MS: "10",
      FLEET_SHUTDOWN_GRACE_MS: "200",
      FLEET_OPS_PORT: "0",
      FLEET_LIFECYCLE_HALT_AFTER: haltAfter,
      LOG_LEVEL: process.env.LIFECYCLE_LOG_DIR ? "debug" : "info",
    },
    process.env.LIFECYCLE_LOG_DIR ? join(process.env.LIFECYCLE_LOG_DIR, `${workerId}.log`) : undefined,
  );
}

/** `prefix`, or `prefix-<n>`: a session id on a partition of `workerId`, once it holds its half. */
async function sessionOn(workerId: string, prefix: string): Promise<string> {
  let mine: number[] = [];
  await expect
    .poll(
      async () => {
        mine = [...(await loopLeaseHolders(client.nc))].flatMap(([p, w]) => (w === workerId ? [p] : []));
        return mine.length;
      },
      { timeout: 20_000 },
    )
    .toBe(PARTITIONS / 2);
  for (let n = 0; ; n++) {
    const sid = n === 0 ? prefix : `${prefix}-${n}`;
    if (mine.includes(partitionOf(sid, PARTITIONS))) return sid;
  }
}

async function sigkill(p: ServiceProcess) {
  const exited = new Promise<void>((resolve) => p.proc.once("exit", () => resolve()));
  p.proc.kill("SIGKILL");
  await exited;
}

/** A session that ran its bash call to the end; its events. */
async function ranSession(sessionId: string): Promise<FleetEvent[]> {
  await client.prompt(sessionId, "go");
  await waitIdle(client, sessionId, 4);
  return storedEvents(client, sessionId);
}

const lifecycleRecords = (sessionId: string) => messagesOn(client, STREAMS.events.name, subjects.lifecycle(sessionId));

/** Whether the session's archive is there (its meta record: reading it while it goes may wait forever). */
async function archiveExists(sessionId: string): Promise<boolean> {
  const store = await new Objm(client.nc).open(OBJECT_STORES.archive.name);
  return (await store.info(archiveNames(sessionId).events)) !== null;
}

async function archiveText(sessionId: string): Promise<string | null> {
  const store = await new Objm(client.nc).open(OBJECT_STORES.archive.name);
  const bytes = await store.getBlob(archiveNames(sessionId).events);
  return bytes === null ? null : new TextDecoder().decode(bytes);
}

const OPTS: LifecycleOptions = { timeoutMs: 120_000, by: "crash-test" };

describe("session lifecycle / a SIGKILL at every step", () => {
  for (const op of ["delete", "archive"] as const) {
    for (const step of DELETION_STEPS) {
      it(`${op}: killed after ${step}, the next worker finishes it and nothing is left`, async () => {
        const a = startLoop(`loop-a-${op}-${step}`, `${op}:${step}`);
        await a.waitForLog();
        const sid = await sessionOn(`loop-a-${op}-${step}`, `crash-${op}-${step.replaceAll("_", "-")}`);
        const history = await ranSession(sid);
        const blobs = blobNamesIn(history);
        expect(blobs).toHaveLength(1);
        const day = utcDayOf(Date.now());
        const spent = await countedSpend(client, sid, history, day);
        expect(spent?.totalTokens).toBeGreaterThan(0);
        const ledgerBefore = (await ledgerOf(client, day))?.totalTokens ?? 0;
        const totalBefore = (await client.tenantBudget(day)).total.totalTokens;

        const done = op === "delete" ? client.deleteSession(sid, OPTS) : client.archiveSession(sid, OPTS);
        done.catch(() => undefined);
        await a.waitForLog("lifecycle_halted");
        await sigkill(a);
        const record = await done;

        expect(record).toMatchObject({
          type: op === "delete" ? "session_deleted" : "session_archived",
          sessionId: sid,
          by: "crash-test",
          events: history.length,
        });
        const opts = { days: [day], blobs, workspace };
        expect(await eventually(() => leftovers(client, sid, opts), NOTHING_LEFT)).toEqual(NOTHING_LEFT);
        expect(await lifecycleRecords(sid)).toBe(1);
        const ledger = await ledgerOf(client, day);
        expect(ledger?.pending).toEqual([]);
        expect((ledger?.totalTokens ?? 0) - ledgerBefore).toBe(spent?.totalTokens);
        // The day's totals keep the session's spend, counted once however the deletion was resumed.
        expect((await client.tenantBudget(day)).total.totalTokens).toBe(totalBefore);
        if (op === "archive") {
          const archive = parseArchive((await archiveText(sid)) ?? "");
          if (!archive.ok) throw new Error(archive.error);
          expect(archive.value.events).toEqual(history);
        }
      }, 120_000);
    }
  }

  for (const step of RESTORE_STEPS) {
    it(`restore: killed after ${step}, the next worker finishes it with the whole history`, async () => {
      const a = startLoop(`loop-a-restore-${step}`, `restore:${step}`);
      await a.waitForLog();
      const sid = await sessionOn(`loop-a-restore-${step}`, `crash-restore-${step.replaceAll("_", "-")}`);
      const history = await ranSession(sid);
      const day = utcDayOf(Date.now());
      const ledgerBefore = (await ledgerOf(client, day))?.totalTokens ?? 0;
      const spent = await countedSpend(client, sid, history, day);
      const totalBefore = (await client.tenantBudget(day)).total.totalTokens;
      await client.archiveSession(sid, OPTS);

      const done = client.restoreSession(sid, OPTS);
      done.catch(() => undefined);
      await a.waitForLog("lifecycle_halted");
      await sigkill(a);
      const record = await done;

      expect(record).toMatchObject({ type: "session_restored", sessionId: sid, events: history.length });
      const back = await storedEvents(client, sid);
      const start = back.findIndex((e) => e.type === "session_restoring");
      expect(back.slice(start + 1, start + 1 + history.length)).toEqual(history);
      // The worker that finishes a restore announces itself before its own `session_restored`.
      expect(
        back
          .slice(start + 1 + history.length)
          .map((e) => e.type)
          .filter((t) => t !== "owner_change"),
      ).toEqual(["session_restored"]);
      expect(new Set(back.map((e) => e.meta.id)).size).toBe(back.length);
      // The record may predate the crash; the worker that takes over settles the rest.
      await expect.poll(() => archiveExists(sid)).toBe(false);
      expect(await lifecycleRecords(sid)).toBe(2);
      await expect.poll(async () => (await ledgerOf(client, day))?.pending).toEqual([]);
      expect((await ledgerOf(client, day))?.totalTokens ?? 0).toBe(ledgerBefore);
      expect((await client.tenantBudget(day)).sessions.get(sid)).toEqual(spent);
      expect((await client.tenantBudget(day)).total.totalTokens).toBe(totalBefore);
      await expect.poll(async () => (await client.getTree(sid)).entries.length).toBeGreaterThan(0);
    }, 120_000);
  }
});
