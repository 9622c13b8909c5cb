// Approvals as policy against real loop processes, a real nats-server and a real tool runner,
// driven through the SDK: a rule with an argument pattern, an approval with edited arguments, the
// sibling rule of a batch, and an expiry that outlives its SIGKILLed worker (PROTOCOL "Approvals").
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient } from "@fleet/client";
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
/** Long enough that the heir usually takes over before it and arms the timer itself. */
const EXPIRY_MS = 10_000;
let server: NatsServer;
let nc: NatsConnection;
let dir: string;
const procs: LoopProcess[] = [];
let runnerNc: NatsConnection;
let runner: ToolRunner;
let client: FleetClient;
/** What `job` ran with, by tool call id. */
const ran = new Map<string, string[]>();
const job = defineTool({
  name: "job",
  description: "records the command it is given",
  parameters: z.object({ cmd: z.string() }),
  async execute(args, ctx) {
    ran.set(ctx.toolCallId, [...(ran.get(ctx.toolCallId) ?? []), args.cmd]);
    return { content: [{ type: "text", text: `ran ${args.cmd}` }] };
  },
});

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "approval-policy-test" });
  dir = mkdtempSync(join(tmpdir(), "fleet-approval-policy-"));
  // One batch of two calls, then an answer.
  writeFileSync(
    join(dir, "batch.json"),
    JSON.stringify({
      turns: [
        {
          content: [
            { type: "toolCall", id: "rm1", name: "job", arguments: { cmd: "rm -rf /srv/data" } },
            { type: "toolCall", id: "ls1", name: "job", arguments: { cmd: "ls /srv" } },
          ],
        },
        { text: "all done" },
      ],
    }),
  );
  writeFileSync(
    join(dir, "one.json"),
    JSON.stringify({
      turns: [
        { content: [{ type: "toolCall", id: "exp1", name: "job", arguments: { cmd: "deploy" } }] },
        { text: "ok" },
      ],
    }),
  );
  runnerNc = await connectNats({ url: server.url, name: "approval-policy-runner" });
  runner = createToolRunner({
    nc: runnerNc,
    tools: [job],
    workspaceRoot: dir,
    // It provisions the topology first: the lease TTL is the loops' (one source, decision 41).
    topology: { leaseTtlMs: TTL },
    logger: createLogger("t", { level: "silent" }),
  });
  await runner.start();
}, 60_000);
afterAll(async () => {
  for (const p of procs) await p.kill("SIGKILL");
  await client?.close();
  await runner?.stop({ graceMs: 0 });
  await runnerNc?.close();
  await nc?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function start(workerId: string, script: string): LoopProcess {
  const p = spawnLoop(scriptedLoopEnv(server.url, join(dir, script), TTL, 200), workerId);
  procs.push(p);
  return p;
}
const ofType = <T extends FleetEvent["type"]>(events: FleetEvent[], type: T) =>
  events.filter((e): e is Extract<FleetEvent, { type: T }> => e.type === type);

/** The id the scripted provider gave a scripted call (`rm1` becomes `rm1-0`: unique per turn). */
function callIdOf(events: FleetEvent[], scripted: string): string {
  for (const e of ofType(events, "tool_execution_start"))
    if (e.toolCallId.startsWith(`${scripted}-`)) return e.toolCallId;
  for (const e of ofType(events, "message_end")) {
    if (e.message.role !== "assistant") continue;
    for (const c of e.message.content) if (c.type === "toolCall" && c.id.startsWith(`${scripted}-`)) return c.id;
  }
  throw new Error(`no call ${scripted} in the log`);
}

describe("approvals as policy / real workers", () => {
  it("an argument pattern asks for one call of a batch; its sibling waits; the approval runs with edited args", async () => {
    const a = start("pol-a", "batch.json");
    try {
      await waitForLog(a, "loop_started");
      client = await FleetClient.connect({ natsUrl: server.url });
      const cmd = commander(nc);
      const sid = "policy-batch-1";
      const rule = {
        tool: "job",
        args: { pointer: "/cmd", regex: "^rm\\s" },
        action: "ask" as const,
        reason: "destructive",
      };
      await client.createSession({}, { sessionId: sid });
      await client.setApprovalRules(sid, [rule]);
      // The rules event follows the command's acceptance on the log.
      await expect.poll(() => client.approvalRules(sid)).toEqual([rule]);
      await client.prompt(sid, "clean up");
      const asked = await cmd.waitFor(sid, (ev) => ofType(ev, "tool_approval_requested").length > 0, 20_000);
      const rm1 = callIdOf(asked, "rm1");
      const ls1 = callIdOf(asked, "ls1");
      expect(ofType(asked, "tool_approval_requested")).toMatchObject([
        {
          toolCallId: rm1,
          args: { cmd: "rm -rf /srv/data" },
          rule: { scope: "session", index: 0, reason: "destructive" },
        },
      ]);
      // The sibling rule: preflight goes in source order, so the later call has not even started.
      await new Promise((r) => setTimeout(r, 500));
      const waiting = await cmd.events(sid);
      expect(ofType(waiting, "tool_execution_start").map((e) => e.toolCallId)).toEqual([rm1]);
      expect(ran.size).toBe(0);
      await expect(client.approveToolCall(sid, rm1, { args: { command: "rm" } })).rejects.toMatchObject({
        code: "invalid",
      });
      await client.approveToolCall(sid, rm1, { args: { cmd: "rm -rf /srv/data/tmp" } });
      const events = await cmd.waitFor(sid, (ev) => ev.some((e) => e.type === "agent_end"), 20_000);
      expect(ofType(events, "tool_approval_resolved")).toMatchObject([
        { toolCallId: rm1, approved: true, editedArgs: { cmd: "rm -rf /srv/data/tmp" } },
      ]);
      // The ls call matched no rule: no request, and it ran as the model asked.
      expect(ofType(events, "tool_approval_requested")).toHaveLength(1);
      expect(ran.get(rm1)).toEqual(["rm -rf /srv/data/tmp"]);
      expect(ran.get(ls1)).toEqual(["ls /srv"]);
      // tool_execution_start keeps the model's arguments; the decision says what ran.
      expect(ofType(events, "tool_execution_start").find((e) => e.toolCallId === rm1)?.args).toEqual({
        cmd: "rm -rf /srv/data",
      });
    } finally {
      await a.kill("SIGTERM");
    }
  }, 90_000);

  it("an approval's expiry outlives its SIGKILLed worker: the heir logs `expired`, once, and the call never runs", async () => {
    const b = start("pol-b", "one.json");
    await waitForLog(b, "loop_started");
    client ??= await FleetClient.connect({ natsUrl: server.url });
    const cmd = commander(nc);
    const sid = "policy-expiry-1";
    await client.createSession({}, { sessionId: sid });
    await client.setApprovalRules(sid, [{ tool: "job", action: "ask", expiresInMs: EXPIRY_MS }]);
    await client.prompt(sid, "deploy it");
    const asked = await cmd.waitFor(sid, (ev) => ofType(ev, "tool_approval_requested").length > 0, 20_000);
    const request = ofType(asked, "tool_approval_requested")[0];
    const callId = callIdOf(asked, "exp1");
    const expiresAt = request?.expiresAt ?? 0;
    expect(expiresAt).toBeGreaterThanOrEqual((request?.meta.ts ?? 0) + EXPIRY_MS - 100);
    await b.kill("SIGKILL");
    const c = start("pol-c", "one.json");
    try {
      const events = await cmd.waitFor(sid, (ev) => ev.some((e) => e.type === "agent_end"), 60_000);
      // Past the expiry, a decision is too late.
      await expect(client.approveToolCall(sid, callId)).rejects.toMatchObject({ code: "not_found" });
      const resolved = ofType(events, "tool_approval_resolved");
      expect(resolved).toMatchObject([{ toolCallId: callId, approved: false, outcome: "expired" }]);
      expect(resolved[0]?.meta.producer).toBe("pol-c");
      expect(resolved[0]?.meta.ts).toBeGreaterThanOrEqual(expiresAt);
      expect(ofType(events, "tool_approval_requested")).toHaveLength(1);
      expect(ran.has(callId)).toBe(false);
      const end = ofType(events, "tool_execution_end").find((e) => e.toolCallId === callId);
      expect(end?.isError).toBe(true);
      expect(JSON.stringify(end?.result.content)).toContain("its approval request expired");
      expect(ofType(events, "agent_end")).toHaveLength(1);
    } finally {
      await c.kill("SIGTERM");
    }
  }, 120_000);
});
