// Two loop workers run the tenant's scheduler (one holds `loop.scheduler`) on a real nats-server.
// Catch-up after the scheduler was down, SIGKILL of the holder at a fire instant, and the four
// overlap policies, each checked on the schedule's log and on the target sessions' logs.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient } from "@fleet/client";
import { type FleetEvent, STREAMS } from "@fleet/protocol";
import { connectNats } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commander } from "../support/loop-harness.js";
import { type LoopProcess, scriptedLoopEnv, spawnLoop, waitForLog } from "../support/loop-process.js";
import { outcomes, scheduleEvents, schedulerHolder, sleep, until } from "./support.js";

const TTL = 1_000;
let server: NatsServer;
let nc: NatsConnection;
let client: FleetClient;
let dir: string;
const procs = new Map<string, LoopProcess>();

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "scheduler-test" });
  dir = mkdtempSync(join(tmpdir(), "fleet-sched-"));
  // Every run streams for about 3 s (30 chunks at 10 a second).
  writeFileSync(
    join(dir, "script.json"),
    JSON.stringify({ chunkChars: 4, turns: [{ text: "z".repeat(120), tokensPerSecond: 10 }] }),
  );
});
afterAll(async () => {
  for (const p of procs.values()) {
    writeFileSync(join(tmpdir(), `fleet-sched-${p.workerId}.log`), p.output());
    await p.kill("SIGKILL");
  }
  await nc?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function start(workerId: string, tickMs: number, extra: Record<string, string> = {}) {
  const p = spawnLoop(
    {
      ...scriptedLoopEnv(server.url, join(dir, "script.json"), TTL),
      FLEET_SCHEDULER_TICK_MS: String(tickMs),
      ...extra,
    },
    workerId,
  );
  procs.set(workerId, p);
  await waitForLog(p, "loop_started", 30_000);
  return p;
}

const cmd = () => commander(nc);
const userPrompts = (events: FleetEvent[]) =>
  events.filter((e) => e.type === "command_accepted" && (e.commandType === "prompt" || e.commandType === "follow_up"));

/** The sessions of FLEET_EVENTS whose id starts with `prefix`. */
async function sessionsOf(prefix: string): Promise<string[]> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(STREAMS.events.name, { subjects_filter: "fleet.evt.*.*" });
  return Object.keys(info.state.subjects ?? {})
    .map((s) => s.split(".")[3] ?? "")
    .filter((s) => s.startsWith(prefix))
    .sort();
}

/** Every slot from the first to the last outcome has exactly one outcome, one spec step apart. */
function expectOneOutcomePerSlot(slots: number[], stepMs: number) {
  expect(new Set(slots).size).toBe(slots.length);
  const sorted = [...slots].sort((a, b) => a - b);
  for (let i = 1; i < sorted.length; i++) expect((sorted[i] ?? 0) - (sorted[i - 1] ?? 0)).toBe(stepMs);
}

describe("schedules / scheduler on real servers", () => {
  it("catches up after the scheduler was down: slots beyond the window are missed, the rest fire once", async () => {
    // A worker sets the deployment up, then stops: no scheduler runs until loop-b starts.
    await start("loop-a", 200);
    await procs.get("loop-a")?.kill("SIGTERM");
    procs.delete("loop-a");
    client = await FleetClient.fromConnection(nc);
    const created = await client.schedules.create({
      scheduleId: "catchup",
      spec: { kind: "every", everyMs: 1_000 },
      target: { kind: "new_session", prompt: "tick" },
      overlap: "allow_all",
      catchupWindowMs: 10_000,
    });
    const downFrom = created.createdAt;
    await sleep(14_500);
    const schedulerUp = Date.now();
    await start("loop-b", 200);
    await until("the catch-up", async () => {
      const o = outcomes(await scheduleEvents(nc, "catchup"));
      return o.some((x) => x.type === "schedule_fired" && x.at > schedulerUp) && o;
    });
    await client.schedules.pause("catchup");
    // A fire in flight when the pause landed records its outcome after it: read once every session
    // made so far has its slot's `schedule_fired`.
    let events = await scheduleEvents(nc, "catchup");
    await expect
      .poll(
        async () => {
          events = await scheduleEvents(nc, "catchup");
          const firedIds = outcomes(events)
            .filter((o) => o.type === "schedule_fired")
            .map((f) => `catchup-${f.at}`)
            .sort();
          return JSON.stringify(await sessionsOf("catchup-")) === JSON.stringify(firedIds);
        },
        { timeout: 15_000 },
      )
      .toBe(true);
    const missed = events.filter((e) => e.type === "schedule_missed");
    expect(missed).toHaveLength(1);
    const m = missed[0]!;
    if (m.type !== "schedule_missed") throw new Error("unreachable");
    expect(m.slot.at).toBe(downFrom + 1_000);
    expect(m.count).toBe((m.lastAt - m.slot.at) / 1_000 + 1);
    expect(m.count).toBeGreaterThanOrEqual(3);
    // Each missed slot was more than the window old when the scheduler came up.
    expect(m.meta.ts - m.lastAt).toBeGreaterThan(10_000);
    const fired = outcomes(events).filter((o) => o.type === "schedule_fired");
    expect(fired[0]?.at).toBe(m.lastAt + 1_000);
    expectOneOutcomePerSlot(
      [...Array.from({ length: m.count }, (_, i) => m.slot.at + i * 1_000), ...fired.map((f) => f.at)],
      1_000,
    );
    // One session per fired slot, each prompted once.
    const sessions = await sessionsOf("catchup-");
    expect(sessions).toEqual(fired.map((f) => `catchup-${f.at}`).sort());
    for (const s of sessions.slice(0, 5)) {
      const ev = await cmd().waitFor(s, (e) => userPrompts(e).length >= 1);
      expect(userPrompts(ev)).toHaveLength(1);
    }
  }, 90_000);

  it("fires each slot exactly once when the holder is SIGKILLed at a fire instant", async () => {
    await start("loop-c", 200);
    const STEP = 2_000;
    await client.schedules.create({
      scheduleId: "kill",
      spec: { kind: "cron", cron: "*/2 * * * * *" },
      target: { kind: "new_session", prompt: "tick" },
      overlap: "allow_all",
      catchupWindowMs: 60_000,
    });
    const kills: string[] = [];
    for (let round = 0; round < 2; round++) {
      const holder = await until("a scheduler holder", () => schedulerHolder(nc));
      await until("a fire by the holder", async () =>
        (await scheduleEvents(nc, "kill")).some((e) => e.type === "schedule_fired" && e.meta.producer === holder),
      );
      // SIGKILL at the next slot's instant (the holder ticks every 200 ms: it may or may not have fired it).
      const next = Math.ceil((Date.now() + 1) / STEP) * STEP;
      await sleep(next - Date.now());
      await procs.get(holder)?.kill("SIGKILL");
      procs.delete(holder);
      kills.push(`${holder}@${new Date(next).toISOString()}`);
      const other = await until("the other worker's lease", async () => {
        const h = await schedulerHolder(nc);
        return h && h !== holder ? h : undefined;
      });
      expect(procs.has(other)).toBe(true);
      // Bring a worker back, so the next round has two schedulers again.
      await start(`${holder}-again`, 200);
    }
    await sleep(3 * STEP);
    await client.schedules.pause("kill");
    await sleep(500);
    const events = await scheduleEvents(nc, "kill");
    const o = outcomes(events);
    expect(o.every((x) => x.type === "schedule_fired")).toBe(true);
    expectOneOutcomePerSlot(
      o.map((x) => x.at),
      STEP,
    );
    const producers = new Set(o.map((x) => x.event.meta.producer));
    expect(producers.size).toBeGreaterThanOrEqual(3);
    // Exactly one session per slot, each with exactly one accepted prompt.
    const sessions = await sessionsOf("kill-");
    expect(sessions).toEqual(o.map((x) => `kill-${x.at}`).sort());
    for (const s of sessions) {
      const ev = await cmd().waitFor(s, (e) => userPrompts(e).length >= 1);
      expect(userPrompts(ev)).toHaveLength(1);
      expect(ev.filter((e) => e.type === "session_created")).toHaveLength(1);
    }
    // How late each slot was recorded fired (the tick is 200 ms; the slots of a failover wait for the lease).
    const late = o.map((x) => x.event.meta.ts - x.at).sort((a, b) => a - b);
    const median = late[Math.floor(late.length / 2)] ?? 0;
    console.log(
      `schedule kill: ${o.length} slots, ${sessions.length} sessions, kills ${kills.join(", ")}; ` +
        `fired after the slot: median ${median} ms, max ${late.at(-1)} ms`,
    );
  }, 120_000);

  it("applies each overlap policy while the previous fire's run is open", async () => {
    const policies = ["skip", "buffer_one", "allow_all", "cancel_other"] as const;
    for (const overlap of policies) {
      const sessionId = `ov-${overlap.replace("_", "-")}`;
      await cmd().send(sessionId, { type: "create_session" });
      await client.schedules.create({
        scheduleId: `ov-${overlap.replace("_", "-")}`,
        spec: { kind: "cron", cron: "* * * * * *" },
        target: { kind: "session", sessionId, prompt: "tick" },
        overlap,
      });
    }
    await sleep(8_000);
    for (const overlap of policies) await client.schedules.pause(`ov-${overlap.replace("_", "-")}`);
    await sleep(4_000); // the last runs end
    const byPolicy = Object.fromEntries(
      await Promise.all(
        policies.map(async (p) => {
          const id = `ov-${p.replace("_", "-")}`;
          return [p, { events: await scheduleEvents(nc, id), session: await cmd().events(id) }] as const;
        }),
      ),
    );
    const types = (p: (typeof policies)[number]) => outcomes(byPolicy[p]!.events).map((o) => o.type);
    const count = (p: (typeof policies)[number], t: string) => types(p).filter((x) => x === t).length;

    // skip: the slots during a run are skipped for overlap; every fire is one accepted prompt, none refused busy.
    expect(count("skip", "schedule_skipped")).toBeGreaterThanOrEqual(2);
    expect(
      outcomes(byPolicy.skip!.events).every(
        (o) => o.type !== "schedule_skipped" || (o.event as { reason?: string }).reason === "overlap",
      ),
    ).toBe(true);
    const skipSession = byPolicy.skip!.session;
    expect(userPrompts(skipSession)).toHaveLength(count("skip", "schedule_fired"));
    expect(skipSession.some((e) => e.type === "command_rejected")).toBe(false);

    // buffer_one: one slot kept, later ones skipped buffer_full, the kept one fired after the run.
    const bo = outcomes(byPolicy.buffer_one!.events);
    const kept = bo.find((o) => o.type === "schedule_buffered");
    expect(kept).toBeDefined();
    expect(
      bo.some((o) => o.type === "schedule_skipped" && (o.event as { reason?: string }).reason === "buffer_full"),
    ).toBe(true);
    expect(bo.some((o) => o.type === "schedule_fired" && o.at === kept?.at)).toBe(true);
    expect(userPrompts(byPolicy.buffer_one!.session)).toHaveLength(count("buffer_one", "schedule_fired"));

    // allow_all: every slot fires; those during a run are follow-ups, all accepted.
    const aa = outcomes(byPolicy.allow_all!.events);
    expect(aa.every((o) => o.type === "schedule_fired")).toBe(true);
    expect(
      aa.filter((o) => (o.event as { commandType?: string }).commandType === "follow_up").length,
    ).toBeGreaterThanOrEqual(2);
    expect(userPrompts(byPolicy.allow_all!.session)).toHaveLength(aa.length);

    // cancel_other: the open run is aborted, then the kept slot fires.
    const co = byPolicy.cancel_other!;
    const cancels = co.events.filter((e) => e.type === "schedule_cancel_requested");
    expect(cancels.length).toBeGreaterThanOrEqual(1);
    const aborts = co.session.filter((e) => e.type === "command_accepted" && e.commandType === "abort");
    expect(aborts.map((e) => (e as { commandId: string }).commandId)).toEqual(
      cancels.map((c) => `${(c as { commandId: string }).commandId}.abort`),
    );
    const cb = outcomes(co.events).filter((o) => o.type === "schedule_buffered");
    expect(cb.length).toBeGreaterThanOrEqual(1);
    expect(outcomes(co.events).some((o) => o.type === "schedule_fired" && o.at === cb[0]?.at)).toBe(true);
    expect(co.session.filter((e) => e.type === "agent_end").length).toBe(count("cancel_other", "schedule_fired"));

    // Every policy: one final outcome per slot (a buffered slot's is its later fire).
    for (const p of policies)
      expectOneOutcomePerSlot(
        outcomes(byPolicy[p]!.events)
          .filter((o) => o.type !== "schedule_buffered")
          .map((o) => o.at),
        1_000,
      );
  }, 90_000);

  it("records a fire its session refused as failed, with the rejection", async () => {
    await cmd().send("refusing", { type: "create_session" });
    await cmd().send("refusing", { type: "set_budget", budget: { session: { totalTokens: 1 } } });
    await client.schedules.create({
      scheduleId: "refused",
      spec: { kind: "every", everyMs: 5_000 },
      target: { kind: "session", sessionId: "refusing", prompt: "tick" },
    });
    const failed = await until("a failed slot", async () =>
      (await scheduleEvents(nc, "refused")).find((e) => e.type === "schedule_failed"),
    );
    await client.schedules.pause("refused");
    if (failed.type !== "schedule_failed") throw new Error("unreachable");
    expect(failed.reason).toMatch(/^budget_exceeded: /);
    const session = await cmd().events("refusing");
    const rejection = session.find((e) => e.type === "command_rejected" && e.commandId === failed.commandId);
    expect(rejection).toMatchObject({ code: "budget_exceeded" });
    const history = await client.schedules.history("refused");
    expect(history.filter((h) => h.event.type === "schedule_failed")).toHaveLength(1);
  }, 60_000);

  it("a holder killed between a fire's publish and its outcome: the next holder fires the slot once", async () => {
    for (const [id, p] of procs) {
      await p.kill("SIGTERM");
      procs.delete(id);
    }
    const halting = await start("loop-h", 200, { FLEET_SCHEDULER_HALT_AFTER: "fire_published" });
    await client.schedules.create({
      scheduleId: "halt",
      spec: { kind: "every", everyMs: 2_000 },
      target: { kind: "new_session", prompt: "tick" },
      overlap: "allow_all",
    });
    await waitForLog(halting, "scheduler_halted", 20_000);
    const line = halting
      .output()
      .split("\n")
      .find((l) => l.includes('"evt":"scheduler_halted"'));
    const commandId = (JSON.parse(line ?? "{}") as { commandId: string }).commandId;
    const slotMs = Date.parse(commandId.replace("sched.halt.", ""));
    // Its commands are stored and the schedule's log has no outcome for the slot.
    expect(outcomes(await scheduleEvents(nc, "halt"))).toEqual([]);
    await start("loop-i", 200);
    await halting.kill("SIGKILL");
    procs.delete("loop-h");
    const fired = await until("the slot fired by the next holder", async () =>
      outcomes(await scheduleEvents(nc, "halt")).find((o) => o.at === slotMs),
    );
    expect(fired.type).toBe("schedule_fired");
    expect(fired.event.meta.producer).toBe("loop-i");
    await sleep(2_500);
    await client.schedules.pause("halt");
    const o = outcomes(await scheduleEvents(nc, "halt"));
    expectOneOutcomePerSlot(
      o.map((x) => x.at),
      2_000,
    );
    const session = await cmd().waitFor(`halt-${slotMs}`, (e) => userPrompts(e).length >= 1);
    expect(userPrompts(session).map((e) => (e as { commandId: string }).commandId)).toEqual([commandId]);
    expect(session.filter((e) => e.type === "session_created")).toHaveLength(1);
    expect(session.filter((e) => e.type === "command_accepted")).toHaveLength(2); // create_session, prompt
  }, 90_000);
});
