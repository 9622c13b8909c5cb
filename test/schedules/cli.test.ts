// `fleet schedule …` against a real nats-server and one loop worker (its scheduler fires the trigger).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectNats } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../client/support/run-cli.js";
import { type LoopProcess, scriptedLoopEnv, spawnLoop, waitForLog } from "../support/loop-process.js";
import { scheduleEvents, until } from "./support.js";

let server: NatsServer;
let nc: NatsConnection;
let dir: string;
let loop: LoopProcess;

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "schedule-cli-test" });
  dir = mkdtempSync(join(tmpdir(), "fleet-sched-cli-"));
  writeFileSync(join(dir, "script.json"), JSON.stringify({ turns: [{ text: "done" }] }));
  loop = spawnLoop(
    { ...scriptedLoopEnv(server.url, join(dir, "script.json"), 1_000), FLEET_SCHEDULER_TICK_MS: "200" },
    "loop-cli",
  );
  await waitForLog(loop, "loop_started", 30_000);
}, 60_000);
afterAll(async () => {
  await loop?.kill("SIGKILL");
  await nc?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const fleet = (...args: string[]) => runCli(["--nats", server.url, "schedule", ...args], { timeoutMs: 30_000 });

describe("fleet schedule", () => {
  it("create, list, show, pause, resume, trigger, history, rm", async () => {
    const created = await fleet(
      "create",
      "standup",
      "--cron",
      "0 9 * * 1-5",
      "--tz",
      "America/New_York",
      "--prompt",
      "summarise yesterday",
      "--create",
      '{"config":{"thinkingLevel":"low"}}',
      "--overlap",
      "buffer_one",
    );
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    expect(created.stdout).toContain('standup  active  cron "0 9 * * 1-5" America/New_York → a new session per fire');
    // 09:00 in New York is 14:00 UTC in winter.
    expect(created.stdout).toMatch(/next {6}\d{4}-\d\d-\d\dT14:00:00\.000Z/);
    const again = await fleet("create", "standup", "--every", "1h", "--prompt", "x");
    expect([again.code, again.stderr]).toEqual([1, expect.stringContaining("schedule standup exists")]);
    const twoSpecs = await fleet("create", "x", "--every", "1h", "--at", "+1m", "--prompt", "x");
    expect(twoSpecs.stderr).toContain("give exactly one of --cron, --every and --at");
    expect((await fleet("list")).stdout).toContain("standup  active");
    const paused = await fleet("pause", "standup", "--note", "holidays");
    expect(paused.stdout).toContain("standup  paused");
    expect(paused.stdout).toContain("note      holidays");
    expect((await fleet("resume", "standup")).stdout).toContain("standup  active");
    const trig = await fleet("trigger", "standup", "--json");
    const { triggerId } = JSON.parse(trig.stdout) as { triggerId: string };
    await until("the trigger's fire", async () =>
      (await scheduleEvents(nc, "standup")).some((e) => e.type === "schedule_fired"),
    );
    const history = await fleet("history", "standup");
    expect(history.stdout.split("\n")[0]).toMatch(
      new RegExp(
        `fired slot trigger ${triggerId} → prompt sched\\.standup\\.trigger\\.${triggerId} on standup-t-${triggerId}`,
      ),
    );
    expect(history.stdout).toContain("paused: holidays");
    const show = JSON.parse((await fleet("show", "standup", "--json")).stdout);
    expect(show.counts.fired).toBe(1);
    expect(show.lastFire.sessionId).toBe(`standup-t-${triggerId}`);
    expect((await fleet("rm", "standup")).stdout).toBe("schedule standup deleted\n");
    const gone = await fleet("show", "standup");
    expect([gone.code, gone.stderr]).toEqual([1, expect.stringContaining("no schedule standup")]);
  }, 90_000);
});
