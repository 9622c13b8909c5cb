// Commands accepted during a run are carried out even when their worker dies: real loop processes,
// SIGKILL and SIGSTOP, a real nats-server. What was accepted is in the log at acceptance; the next
// owner finishes it where pi would. A paused owner that lost its lease appends nothing more.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FleetEvent } from "@fleet/protocol";
import { connectNats, createLogger } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { createToolRunner, defineTool, type ToolRunner } from "@fleet/tools";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { commander } from "../support/loop-harness.js";
import { type LoopProcess, scriptedLoopEnv, spawnLoop, waitForLog } from "../support/loop-process.js";

const TTL = 1_000;
let server: NatsServer;
let nc: NatsConnection;
let dir: string;
const procs: LoopProcess[] = [];
let runnerNc: NatsConnection;
let runner: ToolRunner;
/** Runs of `countjob`, by tool call id. */
const runs = new Map<string, number>();
const countjob = defineTool({
  name: "countjob",
  description: "counts its runs",
  parameters: z.object({}),
  async execute(_args, ctx) {
    runs.set(ctx.toolCallId, (runs.get(ctx.toolCallId) ?? 0) + 1);
    return { content: [{ type: "text", text: "counted" }] };
  },
});

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "crash-acceptance-test" });
  dir = mkdtempSync(join(tmpdir(), "fleet-crash-acceptance-"));
  // Turn 0 streams for seconds (a run is in flight when its worker dies); the others answer at once.
  writeFileSync(
    join(dir, "script.json"),
    JSON.stringify({
      chunkChars: 4,
      turns: [{ text: "z".repeat(400), tokensPerSecond: 40 }, { text: "one" }, { text: "two" }, { text: "three" }],
    }),
  );
  // Every turn streams for seconds (an abort always finds the run streaming, whoever owns it).
  writeFileSync(
    join(dir, "slow.json"),
    JSON.stringify({ chunkChars: 4, turns: [{ text: "s".repeat(400), tokensPerSecond: 40 }] }),
  );
  // A tool call that needs approval, then an answer.
  writeFileSync(
    join(dir, "approval.json"),
    JSON.stringify({
      turns: [{ content: [{ type: "toolCall", id: "job", name: "countjob", arguments: {} }] }, { text: "all done" }],
    }),
  );
  runnerNc = await connectNats({ url: server.url, name: "crash-acceptance-runner" });
  runner = createToolRunner({
    nc: runnerNc,
    tools: [countjob],
    workspaceRoot: dir,
    // It provisions the topology first: the lease TTL is the loops' (one source, decision 41).
    topology: { leaseTtlMs: TTL },
    logger: createLogger("t", { level: "silent" }),
  });
  await runner.start();
});
afterAll(async () => {
  for (const p of procs) await p.kill("SIGKILL");
  await runner?.stop({ graceMs: 0 });
  await runnerNc?.close();
  await nc?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const env = () => scriptedLoopEnv(server.url, join(dir, "script.json"), TTL, 200);

function start(workerId: string, extra: Record<string, string> = {}): LoopProcess {
  const p = spawnLoop({ ...env(), ...extra }, workerId);
  procs.push(p);
  return p;
}

const outcomes = (events: FleetEvent[], id: string) =>
  events.filter((e) => (e.type === "command_accepted" || e.type === "command_rejected") && e.commandId === id);
const text = (e: FleetEvent | undefined) => (e?.type === "message_end" ? JSON.stringify(e.message.content) : undefined);

describe("loop service / commands accepted mid-run survive their worker", () => {
  it("set_model, label, set_name, steer and follow_up accepted during a run are carried out by the next owner after a SIGKILL", async () => {
    const a = start("acc-a");
    await waitForLog(a, "loop_started");
    const cmd = commander(nc);
    const sid = "mid-run-1";
    const prompt = await cmd.send(sid, { type: "prompt", text: "stream a lot" });
    let events = await cmd.waitFor(sid, (ev) => ev.filter((e) => e.type === "message_update").length >= 2);
    const userEntry = events.find((e) => e.type === "message_end" && e.message.role === "user");
    const userId = userEntry && "entry" in userEntry ? userEntry.entry.id : "";
    const ids = {
      model: await cmd.send(sid, { type: "set_model", provider: "scripted", modelId: "after-crash" }),
      label: await cmd.send(sid, { type: "label", targetId: userId, label: "the ask" }),
      name: await cmd.send(sid, { type: "set_name", name: "renamed mid-run" }),
      steer: await cmd.send(sid, { type: "steer", text: "steer me" }),
      follow: await cmd.send(sid, { type: "follow_up", text: "follow me" }),
    };
    events = await cmd.waitFor(
      sid,
      (ev) =>
        Object.values(ids).every((id) => outcomes(ev, id).length === 1) &&
        ev.filter((e) => e.type === "pending_write").length === 3,
    );
    // Accepted, and recorded in the log, while the first turn still streams.
    expect(events.some((e) => e.type === "turn_end")).toBe(false);
    expect(Object.values(ids).map((id) => outcomes(events, id)[0]?.type)).toEqual(Array(5).fill("command_accepted"));
    expect(events.filter((e) => e.type === "queue_update").at(-1)).toMatchObject({
      steer: [{ role: "user" }],
      followUp: [{ role: "user" }],
    });
    await a.kill("SIGKILL");

    const b = start("acc-b");
    events = await cmd.waitFor(sid, (ev) => ev.some((e) => e.type === "agent_end"), 30_000);
    await b.kill("SIGTERM");

    // Every command has exactly one outcome; the run is one run, resumed once, ended once.
    for (const id of [prompt, ...Object.values(ids)]) expect(outcomes(events, id)).toHaveLength(1);
    expect(events.filter((e) => e.type === "agent_start")).toHaveLength(1);
    expect(events.filter((e) => e.type === "run_resumed")).toHaveLength(1);
    expect(events.filter((e) => e.type === "agent_end")).toHaveLength(1);
    const runId = events.find((e) => e.type === "agent_start")?.meta.runId;
    const runStart = events.findIndex((e) => e.type === "agent_start");
    expect(events.slice(runStart).every((e) => e.meta.runId === runId)).toBe(true);

    // Each pending write was flushed once, by the new owner, as the event its pending_write named.
    for (const pending of events.filter((e) => e.type === "pending_write")) {
      if (pending.type !== "pending_write") continue;
      const settled = events.filter((e) => e.meta.id === pending.eventId);
      expect(settled).toHaveLength(1);
      expect(settled[0]?.type).toBe(pending.write.type);
      expect(settled[0]?.meta.producer).toBe("acc-b");
    }
    expect(events.find((e) => e.type === "label")).toMatchObject({ targetId: userId, label: "the ask" });
    expect(events.find((e) => e.type === "session_info")).toMatchObject({ name: "renamed mid-run" });

    // The steer, then the follow-up, reached the model, which was the new one by then.
    const users = events.filter((e) => e.type === "message_end" && e.message.role === "user").map(text);
    expect(users).toEqual([
      JSON.stringify([{ type: "text", text: "stream a lot" }]),
      JSON.stringify([{ type: "text", text: "steer me" }]),
      JSON.stringify([{ type: "text", text: "follow me" }]),
    ]);
    const modelChange = events.findIndex((e) => e.type === "model_change");
    const later = events
      .slice(modelChange)
      .filter((e) => e.type === "message_end" && e.message.role === "assistant")
      .map((e) => (e.type === "message_end" && e.message.role === "assistant" ? e.message.model : ""));
    expect(later.length).toBeGreaterThanOrEqual(2);
    expect(new Set(later)).toEqual(new Set(["after-crash"]));
    expect(events.filter((e) => e.type === "queue_update").at(-1)).toMatchObject({
      steer: [],
      followUp: [],
      nextTurn: [],
    });
  }, 60_000);

  it("an owner paused past its lease is fenced when it wakes: it appends nothing, and the run ends once", async () => {
    const c = start("acc-c");
    await waitForLog(c, "loop_started");
    const d = start("acc-d");
    await waitForLog(d, "loop_started");
    const cmd = commander(nc);
    // a session on a partition that acc-c holds
    let sid = "";
    for (let i = 0; !sid; i++) {
      const candidate = `paused-${i}`;
      await cmd.send(candidate, { type: "create_session" });
      const ev = await cmd.waitFor(candidate, (e) => e.some((x) => x.type === "session_created"));
      if (ev.some((e) => e.type === "owner_change" && e.workerId === "acc-c")) sid = candidate;
      expect(i).toBeLessThan(40);
    }
    await cmd.send(sid, { type: "prompt", text: "stream a lot" });
    await cmd.waitFor(sid, (ev) => ev.filter((e) => e.type === "message_update").length >= 2);
    c.proc.kill("SIGSTOP");
    const takenOver = await cmd.waitFor(
      sid,
      (ev) => ev.some((e) => e.type === "owner_change" && e.workerId === "acc-d"),
      TTL * 6,
    );
    const handover = takenOver.findIndex((e) => e.type === "owner_change" && e.workerId === "acc-d");
    const woken = c.output().length;
    c.proc.kill("SIGCONT");
    const events = await cmd.waitFor(sid, (ev) => ev.some((e) => e.type === "agent_end"), 30_000);
    // The woken owner finds its leases lost (it may also log `fenced` for a write it tried); give it
    // time to try whatever it still had in flight.
    await expect.poll(() => c.output().slice(woken).includes('"evt":"lease_lost"'), { timeout: 20_000 }).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    const final = await cmd.events(sid);
    expect(final.slice(handover).filter((e) => e.meta.producer === "acc-c")).toEqual([]);
    expect(final.filter((e) => e.type === "agent_end")).toHaveLength(1);
    expect(final.filter((e) => e.type === "run_resumed")).toHaveLength(1);
    expect(events.at(-1)?.meta.producer).toBe("acc-d");
    expect(c.proc.exitCode).toBeNull();
    await c.kill("SIGTERM");
    await d.kill("SIGTERM");
  }, 60_000);

  // The two tests below kill the owner right after the command is sent: it may die before or after
  // accepting it, or after accepting and before carrying it out. Each outcome must read the same.
  it("an approval decision sent as its owner is SIGKILLed: the call runs exactly once and the run finishes", async () => {
    const approval = { FLEET_SCRIPT: join(dir, "approval.json"), FLEET_APPROVAL_TOOLS: "countjob" };
    const e = start("acc-e", approval);
    await waitForLog(e, "loop_started");
    const cmd = commander(nc);
    const sid = "approve-kill-1";
    await cmd.send(sid, { type: "prompt", text: "run the job" });
    const asked = await cmd.waitFor(sid, (ev) => ev.some((x) => x.type === "tool_approval_requested"));
    const request = asked.find((x) => x.type === "tool_approval_requested");
    const toolCallId = request?.type === "tool_approval_requested" ? request.toolCallId : "";
    const approve = await cmd.send(sid, { type: "approve_tool_call", toolCallId });
    await e.kill("SIGKILL");
    const f = start("acc-f", approval);
    const events = await cmd.waitFor(sid, (ev) => ev.some((x) => x.type === "agent_end"), 30_000);
    await f.kill("SIGTERM");
    expect(outcomes(events, approve).map((x) => x.type)).toEqual(["command_accepted"]);
    expect(runs.get(toolCallId)).toBe(1);
    expect(events.filter((x) => x.type === "tool_approval_requested")).toHaveLength(1);
    expect(events.filter((x) => x.type === "tool_approval_resolved")).toHaveLength(1);
    expect(events.filter((x) => x.type === "tool_execution_start")).toHaveLength(1);
    const end = events.find((x) => x.type === "tool_execution_end");
    expect(end?.type === "tool_execution_end" && end.isError).toBe(false);
    expect(events.filter((x) => x.type === "agent_end")).toHaveLength(1);
    expect(text(events.filter((x) => x.type === "message_end").at(-1))).toBe(
      JSON.stringify([{ type: "text", text: "all done" }]),
    );
  }, 60_000);

  it("an abort sent as its owner is SIGKILLed mid-stream: the run ends aborted, once", async () => {
    const slow = { FLEET_SCRIPT: join(dir, "slow.json") };
    const g = start("acc-g", slow);
    await waitForLog(g, "loop_started");
    const cmd = commander(nc);
    const sid = "abort-kill-1";
    await cmd.send(sid, { type: "prompt", text: "stream a lot" });
    await cmd.waitFor(sid, (ev) => ev.filter((x) => x.type === "message_update").length >= 2);
    const abort = await cmd.send(sid, { type: "abort" });
    await g.kill("SIGKILL");
    const h = start("acc-h", slow);
    const events = await cmd.waitFor(sid, (ev) => ev.some((x) => x.type === "agent_end"), 30_000);
    await h.kill("SIGTERM");
    expect(outcomes(events, abort).map((x) => x.type)).toEqual(["command_accepted"]);
    expect(events.filter((x) => x.type === "agent_end")).toHaveLength(1);
    // No LLM call starts after the abort is accepted. The message streaming then ends aborted; or,
    // when the abort landed after the resumed run closed the cut message as an error, the call made
    // again ends aborted at once: an empty message, nothing streamed (change 77).
    const accepted = events.findIndex((x) => x.type === "command_accepted" && x.commandId === abort);
    const after = events.slice(accepted);
    after.forEach((x, i) => {
      if (x.type !== "message_start") return;
      const next = after[i + 1];
      expect(next?.type).toBe("message_end");
      expect(next?.type === "message_end" && next.message).toMatchObject({ content: [], stopReason: "aborted" });
    });
    const last = events.filter((x) => x.type === "message_end").at(-1);
    expect(last?.type === "message_end" && last.message.role === "assistant" && last.message.stopReason).toBe(
      "aborted",
    );
    if (after.some((x) => x.type === "message_start")) expect(events.some((x) => x.type === "run_resumed")).toBe(true);
  }, 60_000);
});
