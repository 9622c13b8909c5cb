import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KV_BUCKETS, partitionOf } from "@fleet/protocol";
import { connectNats, LeaseValue } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commander } from "../support/loop-harness.js";
import { type LoopProcess, spawnLoop, waitForLog } from "../support/loop-process.js";

const TTL = 1_000;
let server: NatsServer;
let nc: NatsConnection;
let dir: string;
const procs: LoopProcess[] = [];

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "failover-test" });
  dir = mkdtempSync(join(tmpdir(), "fleet-failover-"));
  // Turn 0 streams slowly (so a run is in flight when its worker dies); turn 1 answers at once.
  writeFileSync(
    join(dir, "script.json"),
    JSON.stringify({
      chunkChars: 4,
      turns: [{ text: "z".repeat(240), tokensPerSecond: 40 }, { text: "second answer" }],
    }),
  );
});
afterAll(async () => {
  for (const p of procs) await p.kill("SIGKILL");
  await nc?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function holders(): Promise<Map<number, string>> {
  const kv = await new Kvm(nc).open(KV_BUCKETS.leases.name);
  const out = new Map<number, string>();
  for await (const key of await kv.keys("loop.p.*")) {
    const entry = await kv.get(key);
    if (entry?.operation !== "PUT") continue;
    const v = LeaseValue.safeParse(entry.json());
    if (v.success) out.set(Number(key.split(".")[2]), v.data.workerId);
  }
  return out;
}

const env = () => ({
  NATS_URL: server.url,
  FLEET_PROVIDER: "scripted",
  FLEET_SCRIPT: join(dir, "script.json"),
  FLEET_LEASE_TTL_MS: String(TTL),
  FLEET_COALESCE_MS: "10",
  FLEET_SHUTDOWN_GRACE_MS: "500",
  FLEET_OPS_PORT: "0",
});

describe("loop service / two workers and a crash", () => {
  it("two workers share 16 partitions, each session is owned by exactly one; SIGKILL moves partitions within TTL + 1 s and resumes the run", async () => {
    const a = spawnLoop(env(), "loop-a");
    procs.push(a);
    await waitForLog(a, "loop_started");
    const b = spawnLoop(env(), "loop-b");
    procs.push(b);
    await waitForLog(b, "loop_started");
    let held = new Map<number, string>();
    for (let i = 0; i < 100; i++) {
      held = await holders();
      const counts = [...held.values()].reduce((m, w) => m.set(w, (m.get(w) ?? 0) + 1), new Map<string, number>());
      if (held.size === 16 && counts.get("loop-a") === 8 && counts.get("loop-b") === 8) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(held.size).toBe(16);
    expect([...held.values()].filter((w) => w === "loop-a")).toHaveLength(8);
    expect([...held.values()].filter((w) => w === "loop-b")).toHaveLength(8);

    // Every session is written by exactly one worker: the producer of its events is its partition's holder.
    const cmd = commander(nc);
    const sessions = Array.from({ length: 12 }, (_, i) => `own-${i}`);
    for (const s of sessions) await cmd.send(s, { type: "create_session" });
    for (const s of sessions) {
      const ev = await cmd.waitFor(s, (e) => e.some((x) => x.type === "session_created"));
      const producers = new Set(ev.map((e) => e.meta.producer));
      expect(producers).toEqual(new Set([held.get(partitionOf(s, 16))]));
    }

    // A run in flight on loop-b when it is SIGKILLed.
    let victim = "";
    for (let i = 0; !victim; i++) if (held.get(partitionOf(`run-${i}`, 16)) === "loop-b") victim = `run-${i}`;
    await cmd.send(victim, { type: "prompt", text: "long one" });
    await cmd.waitFor(victim, (ev) => ev.filter((e) => e.type === "message_update").length >= 2);
    const killedAt = Date.now();
    await b.kill("SIGKILL");
    let movedAt = 0;
    while (Date.now() - killedAt < 10_000) {
      const h = await holders();
      if (h.size === 16 && [...h.values()].every((w) => w === "loop-a")) {
        movedAt = Date.now();
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(movedAt).toBeGreaterThan(0);
    expect(movedAt - killedAt).toBeLessThanOrEqual(TTL + 1_000);

    // The survivor resumed the interrupted run and finished it.
    const events = await cmd.waitFor(victim, (ev) => ev.some((e) => e.type === "agent_end"), 15_000);
    const types = events.map((e) => e.type);
    expect(types).toContain("run_resumed");
    const resumed = events.find((e) => e.type === "run_resumed");
    const runId = events.find((e) => e.type === "agent_start")?.meta.runId;
    expect(resumed?.type === "run_resumed" && resumed.runId).toBe(runId);
    expect(events.filter((e) => e.type === "agent_end").every((e) => e.meta.runId === runId)).toBe(true);
    expect(events.some((e) => e.type === "owner_change" && e.workerId === "loop-a")).toBe(true);

    // New prompts to sessions of the dead worker's partitions succeed.
    let moved = "";
    for (let i = 0; !moved; i++) if (held.get(partitionOf(`after-${i}`, 16)) === "loop-b") moved = `after-${i}`;
    await cmd.send(moved, { type: "prompt", text: "hello" });
    const after = await cmd.waitFor(moved, (ev) => ev.some((e) => e.type === "agent_end"));
    expect(new Set(after.map((e) => e.meta.producer))).toEqual(new Set(["loop-a"]));

    await a.kill("SIGTERM");
    expect(a.proc.exitCode).toBe(0);
  }, 60_000);
});
