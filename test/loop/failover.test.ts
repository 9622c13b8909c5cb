import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { partitionOf } from "@fleet/protocol";
import { connectNats, createLogger } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { createToolRunner, defineTool } from "@fleet/tools";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { commander } from "../support/loop-harness.js";
import { type LoopProcess, loopLeaseHolders, scriptedLoopEnv, spawnLoop, waitForLog } from "../support/loop-process.js";

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

const holders = () => loopLeaseHolders(nc);

const env = () => scriptedLoopEnv(server.url, join(dir, "script.json"), TTL);

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
    // The cut assistant message is closed with exactly the text its logged deltas carried.
    const cut = types.indexOf("run_resumed");
    const started = types.lastIndexOf("message_start", cut);
    const streamed = events
      .slice(started, cut)
      .flatMap((e) => (e.type === "message_update" ? e.deltas : []))
      .flatMap((d) => (d.type === "text_delta" ? [d.delta] : []))
      .join("");
    const closed = events.slice(cut).find((e) => e.type === "message_end" && e.message.role === "assistant");
    const closedText =
      closed?.type === "message_end" && closed.message.role === "assistant"
        ? closed.message.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("")
        : undefined;
    expect(streamed.length).toBeGreaterThan(0);
    expect(closedText).toBe(streamed);

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

describe("loop service / a crash while a tool runs", () => {
  it("the survivor resumes the run, reuses the runner's result (the tool runs once) and finishes", async () => {
    let executions = 0;
    const slow = defineTool({
      name: "slowjob",
      description: "takes a while",
      parameters: z.object({ ms: z.number() }),
      async execute(args) {
        executions++;
        await new Promise((r) => setTimeout(r, args.ms));
        return { content: [{ type: "text", text: "job done" }] };
      },
    });
    const runnerNc = await connectNats({ url: server.url, name: "crash-runner" });
    const runner = createToolRunner({
      nc: runnerNc,
      tools: [slow],
      workspaceRoot: dir,
      logger: createLogger("t", { level: "silent" }),
    });
    await runner.start();
    writeFileSync(
      join(dir, "tool-script.json"),
      JSON.stringify({
        turns: [
          { content: [{ type: "toolCall", id: "job", name: "slowjob", arguments: { ms: 2500 } }] },
          { text: "all done" },
        ],
      }),
    );
    const scriptEnv = { ...env(), FLEET_SCRIPT: join(dir, "tool-script.json") };
    const c = spawnLoop(scriptEnv, "loop-c");
    const d = spawnLoop(scriptEnv, "loop-d");
    procs.push(c, d);
    try {
      await waitForLog(c, "loop_started");
      await waitForLog(d, "loop_started");
      let held = new Map<number, string>();
      for (let i = 0; i < 100; i++) {
        held = await holders();
        const ws = new Set(held.values());
        if (held.size === 16 && ws.has("loop-c") && ws.has("loop-d") && !ws.has("loop-a")) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      let victim = "";
      for (let i = 0; !victim; i++) if (held.get(partitionOf(`job-${i}`, 16)) === "loop-d") victim = `job-${i}`;
      const cmd = commander(nc);
      await cmd.send(victim, { type: "prompt", text: "run the job" });
      await cmd.waitFor(victim, (ev) => ev.some((e) => e.type === "tool_execution_start"));
      await d.kill("SIGKILL");
      const events = await cmd.waitFor(victim, (ev) => ev.some((e) => e.type === "agent_end"), 20_000);
      expect(executions).toBe(1);
      const types = events.map((e) => e.type);
      expect(types).toContain("run_resumed");
      const end = events.find((e) => e.type === "tool_execution_end");
      expect(end?.type === "tool_execution_end" && end.isError).toBe(false);
      expect(end?.type === "tool_execution_end" && end.result.content).toEqual([{ type: "text", text: "job done" }]);
      expect(events.filter((e) => e.type === "tool_execution_end")).toHaveLength(1);
      const last = events.filter((e) => e.type === "message_end").at(-1);
      expect(last?.type === "message_end" && last.message.role === "assistant" && last.message.content).toEqual([
        { type: "text", text: "all done" },
      ]);
      expect(events.filter((e) => e.type === "agent_end").at(-1)?.meta.producer).toBe("loop-c");
    } finally {
      await c.kill("SIGTERM");
      await runner.stop({ graceMs: 0 });
      await runnerNc.close();
    }
  }, 60_000);
});
