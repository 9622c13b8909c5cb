import { runnerPresenceKey } from "@fleet/protocol";
// Runners as real processes: SIGKILL mid-call (redelivery per retry policy), SIGTERM, exit codes.
import { createToolRunner, defineTool } from "@fleet/tools";
import { connect } from "@nats-io/transport-node";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  executions,
  finalOf,
  publishCall,
  type RunnerProcess,
  readRecords,
  type Stack,
  sleep,
  spawnRunner,
  startStack,
  stopRunnerProcess,
  textOf,
  until,
  waitForRecord,
  waitForResult,
} from "./support.js";

/** Presence TTL; tool consumers take it as ack_wait (no FLEET_TOOL_ACK_WAIT_MS). */
const TTL_MS = 1_500;

describe("tool runner processes", () => {
  let stack: Stack;
  const procs: RunnerProcess[] = [];

  beforeAll(async () => {
    stack = await startStack({ leaseTtlMs: TTL_MS });
  });
  afterEach(async () => {
    // Graceful stops remove each runner's presence, so later tests see no stale live runners.
    for (const p of procs.splice(0)) await stopRunnerProcess(p);
  });
  afterAll(async () => {
    await stack.stop();
  });

  async function twoRunners(prefix: string) {
    const [a, b] = await Promise.all([spawnRunner(stack, `${prefix}-a`), spawnRunner(stack, `${prefix}-b`)]);
    procs.push(a, b);
    return { a, b, byId: new Map([a, b].map((r) => [r.runnerId, r])) };
  }

  it("retry:safe — when the runner executing a call is SIGKILLed, another runner completes it", async () => {
    const { byId } = await twoRunners("safe");
    await publishCall(stack.js, {
      sessionId: "s-kill-safe",
      toolCallId: "c1",
      toolName: "sleep_safe",
      args: { ms: 2 * TTL_MS + 1_500 },
    });
    const started = await waitForRecord(stack, "s-kill-safe", "c1", "started");
    // Kill it mid-execution: once the tool itself has begun (it logs each execution).
    await until(async () => (await executions(stack, "s-kill-safe")).length === 1, 10_000, "execution began");
    const victim = byId.get(started.runnerId ?? "") as RunnerProcess;
    const survivor = [...byId.values()].find((r) => r !== victim) as RunnerProcess;
    // A live runner keeps its call past ack_wait (the presence TTL): no second start meanwhile.
    await sleep(2 * TTL_MS);
    expect((await readRecords(stack, "s-kill-safe", "c1")).map((r) => r.record.kind)).toEqual(["started"]);
    expect(await executions(stack, "s-kill-safe")).toHaveLength(1);
    const killedAt = Date.now();
    victim.proc.kill("SIGKILL");
    expect(await victim.exited).toBe("SIGKILL");
    const records = await waitForResult(stack, "s-kill-safe", "c1", 30_000);
    const rerunAt = records.filter((r) => r.record.kind === "started")[1]?.at ?? Number.NaN;
    console.log(`dead runner (retry:safe) re-run after ${rerunAt - killedAt} ms (presence TTL ${TTL_MS} ms)`);
    expect(rerunAt - killedAt).toBeLessThanOrEqual(TTL_MS + 1_000);
    expect(records.filter((r) => r.record.kind === "started").map((r) => r.runnerId)).toEqual([
      victim.runnerId,
      survivor.runnerId,
    ]);
    expect(finalOf(records)).toEqual({
      kind: "result",
      content: [{ type: "text", text: `slept ${2 * TTL_MS + 1_500} ms on ${survivor.runnerId}` }],
      isError: false,
    });
    expect(await executions(stack, "s-kill-safe")).toEqual([victim.runnerId, survivor.runnerId]);
  });

  it("retry:never — when the runner executing a call is SIGKILLed, the call gets the runner-lost error", async () => {
    const { byId } = await twoRunners("never");
    await publishCall(stack.js, {
      sessionId: "s-kill-never",
      toolCallId: "c1",
      toolName: "sleep_never",
      args: { ms: 1_500 },
    });
    const started = await waitForRecord(stack, "s-kill-never", "c1", "started");
    // Kill it mid-execution: once the tool itself has begun (it logs each execution).
    await until(async () => (await executions(stack, "s-kill-never")).length === 1, 10_000, "execution began");
    const victim = byId.get(started.runnerId ?? "") as RunnerProcess;
    const survivor = [...byId.values()].find((r) => r !== victim) as RunnerProcess;
    const killedAt = Date.now();
    victim.proc.kill("SIGKILL");
    const records = await waitForResult(stack, "s-kill-never", "c1", 30_000);
    const failedAt = records.at(-1)?.at ?? Number.NaN;
    console.log(`dead runner (retry:never) failed after ${failedAt - killedAt} ms (presence TTL ${TTL_MS} ms)`);
    expect(failedAt - killedAt).toBeLessThanOrEqual(TTL_MS + 1_000);
    expect(records.map((r) => [r.record.kind, r.runnerId])).toEqual([
      ["started", victim.runnerId],
      ["result", survivor.runnerId],
    ]);
    expect(finalOf(records)).toEqual({
      kind: "result",
      content: [{ type: "text", text: "Tool runner lost while executing sleep_never" }],
      details: {},
      isError: true,
    });
    expect(await executions(stack, "s-kill-never")).toEqual([victim.runnerId]);
  });

  it("main.ts serves the FLEET_TOOLS selection and SIGTERM exits 0, removing its presence", async () => {
    const main = await spawnRunner(stack, "main-a", { entry: "main", env: { FLEET_TOOLS: "read,ls" } });
    procs.push(main);
    const presence = (await stack.topo.kv.leases.get(runnerPresenceKey("main-a")))?.json() as {
      tools: Record<string, unknown>;
    };
    expect(Object.keys(presence.tools).sort()).toEqual(["ls", "read"]);
    await publishCall(stack.js, { sessionId: "s-main", toolCallId: "c1", toolName: "ls", args: {} });
    expect(textOf(await waitForResult(stack, "s-main", "c1"))).toBe("(empty directory)");
    main.proc.kill("SIGTERM");
    expect(await main.exited).toBe(0);
    expect((await stack.topo.kv.leases.get(runnerPresenceKey("main-a")))?.operation).toBe("DEL");
    expect(main.output()).toContain('"evt":"runner_stopped"');
  });

  it("main.ts exits 1 with a clear message when a live runner serves a tool with another schema", async () => {
    const nc = await connect({ servers: stack.nats.url });
    const rival = createToolRunner({
      nc,
      tools: [
        defineTool({
          name: "read",
          description: "not pi's read",
          parameters: z.object({ path: z.string() }),
          execute: () => "",
        }),
      ],
      runnerId: "rival-read",
      workspaceRoot: stack.workspaceRoot,
      logger: pino({ level: "silent" }),
    });
    expect(await rival.start()).toEqual({ ok: true });
    try {
      const main = await spawnRunner(stack, "main-conflict", {
        entry: "main",
        env: { FLEET_TOOLS: "read" },
        waitReady: false,
      });
      procs.push(main);
      expect(await main.exited).toBe(1);
      expect(main.output()).toContain(
        'fleet-tools: tool "read" version 1 is served by live runner rival-read with a different schema',
      );
    } finally {
      await rival.stop({ graceMs: 0 });
      await nc.close();
    }
  });

  it("main.ts exits 2 on an unknown FLEET_TOOLS entry", async () => {
    const main = await spawnRunner(stack, "main-bad", {
      entry: "main",
      env: { FLEET_TOOLS: "read,teleport" },
      waitReady: false,
    });
    procs.push(main);
    expect(await main.exited).toBe(2);
    expect(main.output()).toContain(
      "fleet-tools: FLEET_TOOLS: unknown tool(s) teleport; built-in tools are read, write, edit, bash, ls, find, grep",
    );
  });
});
