import { OBJECT_STORES, runnerPresenceKey, subjects } from "@fleet/protocol";
import { builtinTools, createToolRunner, defineTool, type ToolRunner } from "@fleet/tools";
import { processesMatching } from "@fleet/tools/testing";
import { AckPolicy, DeliverPolicy } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { echoTool, testTools } from "./fixtures/test-tools.js";
import {
  consumerCounts,
  executions,
  finalOf,
  publishCall,
  readRecords,
  type Stack,
  sleep,
  startStack,
  textOf,
  until,
  waitForRecord,
  waitForResult,
} from "./support.js";

const tools = [...testTools, ...builtinTools];
const silent = pino({ level: "silent" });

describe("tool runner (in-process runners, real nats-server)", () => {
  let stack: Stack;
  const runners: ToolRunner[] = [];
  const conns: NatsConnection[] = [];

  async function startRunner(runnerId: string, extra: Partial<Parameters<typeof createToolRunner>[0]> = {}) {
    const nc = await connect({ servers: stack.nats.url });
    conns.push(nc);
    const runner = createToolRunner({
      nc,
      tools,
      runnerId,
      workspaceRoot: stack.workspaceRoot,
      logger: silent,
      ackWaitMs: 2_000,
      ...extra,
    });
    const started = await runner.start();
    if (!started.ok) throw new Error(started.error);
    runners.push(runner);
    return runner;
  }

  beforeAll(async () => {
    stack = await startStack();
  });
  afterEach(async () => {
    await Promise.all(runners.splice(0).map((r) => r.stop({ graceMs: 0 })));
    await Promise.all(conns.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("takes the presence TTL as ack_wait by default, also on a consumer an older runner made with 30 s", async () => {
    await stack.topo.jsm.consumers.add("FLEET_TOOL_CALLS", {
      durable_name: "tool-echo",
      filter_subject: "fleet.tool.call.echo",
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: 30_000_000_000,
      max_ack_pending: 1000,
      max_deliver: -1,
    });
    const nc = await connect({ servers: stack.nats.url });
    conns.push(nc);
    const runner = createToolRunner({
      nc,
      tools: [echoTool],
      runnerId: "ackwait-a",
      workspaceRoot: stack.workspaceRoot,
      logger: silent,
    });
    expect(await runner.start()).toEqual({ ok: true });
    runners.push(runner);
    const ttlMs = (await stack.topo.kv.leases.status()).ttl;
    const info = await stack.topo.jsm.consumers.info("FLEET_TOOL_CALLS", "tool-echo");
    expect(info.config.ack_wait).toBe(ttlMs * 1_000_000);
  });

  it("registers every tool in fleet_tools and announces its presence", async () => {
    await startRunner("reg-a");
    const entry = await stack.topo.kv.tools.get("read");
    expect(entry?.json()).toMatchObject({
      name: "read",
      parameters: { type: "object", required: ["path"] },
      executionMode: "parallel",
      retry: "safe",
      timeoutMs: 180_000,
      version: "1",
      runnerId: "reg-a",
    });
    expect((await stack.topo.kv.tools.get("bash"))?.json()).toMatchObject({ retry: "never" });
    const presence = (await stack.topo.kv.leases.get(runnerPresenceKey("reg-a")))?.json() as {
      tools: Record<string, unknown>;
    };
    expect(Object.keys(presence.tools).sort()).toEqual([
      "bash",
      "big",
      "echo",
      "edit",
      "find",
      "grep",
      "ls",
      "read",
      "sleep_never",
      "sleep_safe",
      "write",
    ]);
  });

  it("runs a call: started, then result, and acks the call after the result", async () => {
    await startRunner("basic-a");
    await publishCall(stack.js, { sessionId: "s-basic", toolCallId: "c1", toolName: "echo", args: { text: "hi" } });
    const records = await waitForResult(stack, "s-basic", "c1");
    expect(records.map((r) => r.record)).toEqual([
      { kind: "started", runnerId: "basic-a", ts: expect.any(Number) },
      { kind: "result", content: [{ type: "text", text: "hi" }], isError: false },
    ]);
    expect(records.map((r) => r.runnerId)).toEqual(["basic-a", "basic-a"]);
    await until(async () => (await consumerCounts(stack, "echo")).ackPending === 0, 5_000, "ack");
    expect(await consumerCounts(stack, "echo")).toEqual({ pending: 0, ackPending: 0 });
  });

  it("streams updates between started and result", async () => {
    await startRunner("upd-a", { updateIntervalMs: 0 });
    await publishCall(stack.js, {
      sessionId: "s-upd",
      toolCallId: "c1",
      toolName: "sleep_safe",
      args: { ms: 300, steps: 3 },
    });
    const records = await waitForResult(stack, "s-upd", "c1");
    expect(records.map((r) => r.record.kind)).toEqual(["started", "update", "update", "update", "result"]);
    expect(records.slice(1, 4).map((r) => r.record)).toEqual(
      [1, 2, 3].map((step) => ({ kind: "update", partialResult: { step } })),
    );
  });

  it("bash streams stdout and stderr progress as update records", async () => {
    await startRunner("bash-upd");
    await publishCall(stack.js, {
      sessionId: "s-bash",
      toolCallId: "c1",
      toolName: "bash",
      args: { command: "for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.2; done; exit 2" },
    });
    const records = await waitForResult(stack, "s-bash", "c1");
    const updates = records.filter((r) => r.record.kind === "update");
    expect(updates.length).toBeGreaterThanOrEqual(2);
    expect(textOf(records)).toBe("out1\nerr1\nout2\nerr2\nout3\nerr3\n\n\nCommand exited with code 2");
    expect(finalOf(records)).toMatchObject({ isError: true, details: { exitCode: 2 } });
  });

  it("gives pi's validation error for bad arguments", async () => {
    await startRunner("val-a");
    await publishCall(stack.js, { sessionId: "s-val", toolCallId: "c1", toolName: "read", args: { path: 7 } });
    const records = await waitForResult(stack, "s-val", "c1");
    expect(finalOf(records)).toEqual({
      kind: "result",
      content: [
        {
          type: "text",
          text: 'Validation failed for tool "read":\n  - path: Invalid input: expected string, received number\n\nReceived arguments:\n{\n  "path": 7\n}',
        },
      ],
      details: {},
      isError: true,
    });
  });

  it("spreads parallel calls over two runners", async () => {
    await startRunner("par-a", { concurrency: 4 });
    await startRunner("par-b", { concurrency: 4 });
    const ids = Array.from({ length: 16 }, (_, i) => `c${i}`);
    const t0 = Date.now();
    await Promise.all(
      ids.map((id) =>
        publishCall(stack.js, { sessionId: "s-par", toolCallId: id, toolName: "sleep_safe", args: { ms: 300 } }),
      ),
    );
    const all = await Promise.all(ids.map((id) => waitForResult(stack, "s-par", id)));
    const elapsed = Date.now() - t0;
    const byRunner = new Map<string, number>();
    for (const records of all) {
      expect(finalOf(records).isError).toBe(false);
      const owner = records[0]?.runnerId ?? "?";
      byRunner.set(owner, (byRunner.get(owner) ?? 0) + 1);
    }
    expect([...byRunner.keys()].sort()).toEqual(["par-a", "par-b"]);
    expect([...byRunner.values()].reduce((a, b) => a + b)).toBe(16);
    // 16 calls of 300 ms on 2 × 4 slots: two waves, not sixteen.
    expect(elapsed).toBeLessThan(16 * 300);
    expect((await executions(stack, "s-par")).length).toBe(16);
  });

  it("runs a call published twice only once, and a later request gets the stored result", async () => {
    await startRunner("dup-a");
    const call = { sessionId: "s-dup", toolCallId: "c1", toolName: "echo", args: { text: "once" } };
    const first = await publishCall(stack.js, call);
    const second = await publishCall(stack.js, call);
    expect(second.duplicate).toBe(true);
    expect(second.seq).toBe(first.seq);
    await waitForResult(stack, "s-dup", "c1");
    // A new request for the same call under another msgID (as after the dedup window).
    await publishCall(stack.js, call, "s-dup.c1.again");
    await until(
      async () =>
        (await consumerCounts(stack, "echo")).ackPending + (await consumerCounts(stack, "echo")).pending === 0,
    );
    const records = await readRecords(stack, "s-dup", "c1");
    expect(records.map((r) => r.record.kind)).toEqual(["started", "result"]);
    expect(await executions(stack, "s-dup")).toHaveLength(1);
  });

  it("two runners receiving the same call at once execute it once (claim by expected subject sequence)", async () => {
    await startRunner("race-a");
    await startRunner("race-b");
    for (let i = 0; i < 10; i++) {
      const call = { sessionId: "s-race", toolCallId: `c${i}`, toolName: "sleep_safe", args: { ms: 50 } };
      await Promise.all([publishCall(stack.js, call, `race-${i}-x`), publishCall(stack.js, call, `race-${i}-y`)]);
    }
    for (let i = 0; i < 10; i++) await waitForResult(stack, "s-race", `c${i}`);
    await until(
      async () => {
        const c = await consumerCounts(stack, "sleep_safe");
        return c.pending + c.ackPending === 0;
      },
      15_000,
      "both copies acked",
    );
    expect((await executions(stack, "s-race")).length).toBe(10);
    for (let i = 0; i < 10; i++) {
      const kinds = (await readRecords(stack, "s-race", `c${i}`)).map((r) => r.record.kind);
      expect(kinds).toEqual(["started", "update", "result"]);
    }
  });

  it("cancel stops a long bash and no process of it survives, grandchildren included", async () => {
    await startRunner("cancel-a");
    // Pid files written in the sandbox hold its own PID namespace's pids: find the host processes
    // by a marker in their command lines instead (bwrap, the shell and both sleeps carry it).
    const marker = `${process.pid}0${Date.now() % 100_000}`;
    await publishCall(stack.js, {
      sessionId: "s-cancel",
      toolCallId: "c1",
      toolName: "bash",
      args: { command: `sleep 60.${marker} & (sleep 61.${marker} &); wait` },
    });
    await until(() => processesMatching(new RegExp(`^sleep 6[01]\\.${marker}$`)).length === 2);
    expect(processesMatching(marker).length).toBeGreaterThanOrEqual(4);
    const t0 = Date.now();
    stack.nc.publish(subjects.toolCancel("s-cancel", "c1"));
    const records = await waitForResult(stack, "s-cancel", "c1");
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(finalOf(records)).toEqual({
      kind: "result",
      content: [{ type: "text", text: "Operation aborted" }],
      details: {},
      isError: true,
    });
    expect(processesMatching(marker)).toEqual([]);
  });

  it("a cancel that arrives before its call is delivered still aborts it", async () => {
    await startRunner("early-cancel");
    stack.nc.publish(subjects.toolCancel("s-early", "c1"));
    await stack.nc.flush();
    await sleep(50);
    await publishCall(stack.js, {
      sessionId: "s-early",
      toolCallId: "c1",
      toolName: "sleep_safe",
      args: { ms: 5_000 },
    });
    const records = await waitForResult(stack, "s-early", "c1");
    expect(textOf(records)).toBe("Operation aborted");
  });

  it("gives the deadline error when a call runs past its deadline", async () => {
    await startRunner("deadline-a");
    const t0 = Date.now();
    await publishCall(stack.js, {
      sessionId: "s-deadline",
      toolCallId: "c1",
      toolName: "sleep_safe",
      args: { ms: 10_000 },
      deadline: Date.now() + 400,
    });
    const records = await waitForResult(stack, "s-deadline", "c1");
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(textOf(records)).toMatch(/^Tool sleep_safe exceeded its deadline of (39\d|400) ms$/);
    expect(finalOf(records).isError).toBe(true);
  });

  it("truncates output over the message limit and keeps the full output in fleet_blobs", async () => {
    await startRunner("big-a");
    await publishCall(stack.js, { sessionId: "s-big", toolCallId: "c1", toolName: "big", args: { bytes: 3_000_000 } });
    const records = await waitForResult(stack, "s-big", "c1");
    const final = finalOf(records);
    const ref = (final.details as { fullOutput: { bucket: string; name: string; size: number } }).fullOutput;
    expect(ref).toMatchObject({ bucket: OBJECT_STORES.blobs.name, name: "tool-output/s-big/c1/result.json" });
    expect(textOf(records)).toMatch(
      /\[Output truncated: the result is \d+ bytes, over the \d+-byte limit \(FLEET_MAX_TOOL_RESULT_BYTES\); \d+ of 3000000 text bytes shown\. Full output: blob fleet_blobs\/tool-output\/s-big\/c1\/result\.json\]$/,
    );
    const store = await new Objm(stack.nc).open(OBJECT_STORES.blobs.name);
    const blob = await store.getBlob(ref.name);
    const stored = JSON.parse(new TextDecoder().decode(blob ?? new Uint8Array())) as {
      content: Array<{ text: string }>;
    };
    expect(stored.content[0]?.text.length).toBe(3_000_000);
    expect(stored.content[0]?.text.startsWith("line 0 ")).toBe(true);
    expect(ref.size).toBe(blob?.byteLength);
  });

  it("bash output over its cap is retrievable in full from the blob store", async () => {
    await startRunner("bash-big");
    await publishCall(stack.js, {
      sessionId: "s-bashbig",
      toolCallId: "c1",
      toolName: "bash",
      args: { command: "seq 1 200000" },
    });
    const records = await waitForResult(stack, "s-bashbig", "c1");
    const ref = (finalOf(records).details as { fullOutput: { name: string } }).fullOutput;
    expect(ref.name).toBe("tool-output/s-bashbig/c1/bash-output.txt");
    expect(textOf(records)).toMatch(
      /\n200000\n\n\n\[Showing lines 198002-200001 of 200001\. Full output: blob fleet_blobs\/tool-output\/s-bashbig\/c1\/bash-output\.txt \(1\.2MB\)\]$/,
    );
    const store = await new Objm(stack.nc).open(OBJECT_STORES.blobs.name);
    const full = new TextDecoder().decode((await store.getBlob(ref.name)) ?? new Uint8Array());
    expect(full).toBe(`${Array.from({ length: 200000 }, (_, i) => i + 1).join("\n")}\n`);
  });

  it("survives bad requests: non-JSON is dropped, a wrong-typed one gets an error result", async () => {
    const runner = await startRunner("bad-a");
    await stack.js.publish(subjects.toolCall("echo"), new TextEncoder().encode("{not json"), { msgID: "garbage-1" });
    await stack.js.publish(subjects.toolCall("echo"), new Uint8Array([0xff, 0xfe]), { msgID: "garbage-2" });
    await stack.js.publish(
      subjects.toolCall("echo"),
      new TextEncoder().encode(
        JSON.stringify({ sessionId: "s-bad", toolCallId: "c1", toolName: "echo", runId: 5, deadline: "soon" }),
      ),
      { msgID: "garbage-3" },
    );
    const wrong = await waitForResult(stack, "s-bad", "c1");
    expect(textOf(wrong)).toBe(
      "Invalid tool call request: runId: Invalid input: expected string, received number; args: Invalid input: expected nonoptional, received undefined; deadline: Invalid input: expected number, received string",
    );
    await stack.js.publish(
      subjects.toolCall("echo"),
      new TextEncoder().encode(
        JSON.stringify({ sessionId: "s-bad", toolCallId: "c2", toolName: "read", runId: "r", args: {}, deadline: 0 }),
      ),
      { msgID: "misrouted-2" },
    );
    const misrouted = await waitForResult(stack, "s-bad", "c2");
    expect(textOf(misrouted)).toBe(
      'Invalid tool call request: toolName "read" was published on the subject of tool "echo"',
    );
    await publishCall(stack.js, {
      sessionId: "s-bad",
      toolCallId: "c3",
      toolName: "echo",
      args: { text: "still alive" },
    });
    expect(textOf(await waitForResult(stack, "s-bad", "c3"))).toBe("still alive");
    // A bad copy carrying the ids of a finished call leaves that call's records alone.
    await stack.js.publish(
      subjects.toolCall("echo"),
      new TextEncoder().encode(JSON.stringify({ sessionId: "s-bad", toolCallId: "c3", toolName: "echo", runId: 1 })),
      { msgID: "garbage-4" },
    );
    await until(async () => {
      const c = await consumerCounts(stack, "echo");
      return c.pending + c.ackPending === 0;
    });
    expect((await readRecords(stack, "s-bad", "c3")).map((r) => r.record.kind)).toEqual(["started", "result"]);
    expect(runner.isReady()).toBe(true);
    await until(async () => (await consumerCounts(stack, "echo")).ackPending === 0);
    expect(await consumerCounts(stack, "echo")).toEqual({ pending: 0, ackPending: 0 });
  });

  it("refuses to start against a live registration of the same version with another schema", async () => {
    await startRunner("owner-a");
    const other = defineTool({
      ...echoTool,
      description: "Echoes differently",
      parameters: echoTool.parameters,
      execute: () => "x",
    });
    const nc = await connect({ servers: stack.nats.url });
    conns.push(nc);
    const rival = createToolRunner({
      nc,
      tools: [other],
      runnerId: "rival-b",
      workspaceRoot: stack.workspaceRoot,
      logger: silent,
    });
    expect(await rival.start()).toEqual({
      ok: false,
      error:
        'tool "echo" version 1 is served by live runner owner-a with a different schema (description, parameters, executionMode, retry or timeoutMs). Give this tool a new version for a rolling upgrade, or stop that runner first.',
    });
    expect((await stack.topo.kv.tools.get("echo"))?.json()).toMatchObject({
      description: "Returns its text",
      version: "1",
    });
    expect((await stack.topo.kv.leases.get(runnerPresenceKey("rival-b")))?.operation).toBe("DEL");
  });

  it("a new version replaces the schema (rolling upgrade) and logs it; a dead runner's registration is replaced", async () => {
    await startRunner("old-a");
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(line) });
    const v2 = defineTool({
      name: "echo",
      description: "Returns its text, upper-cased",
      parameters: z.object({ text: z.string(), upper: z.boolean().optional() }),
      version: "2",
      execute: ({ text }) => text.toUpperCase(),
    });
    const nc = await connect({ servers: stack.nats.url });
    conns.push(nc);
    const upgraded = createToolRunner({
      nc,
      tools: [v2],
      runnerId: "new-b",
      workspaceRoot: stack.workspaceRoot,
      logger,
    });
    expect(await upgraded.start()).toEqual({ ok: true });
    runners.push(upgraded);
    expect((await stack.topo.kv.tools.get("echo"))?.json()).toMatchObject({ version: "2", runnerId: "new-b" });
    expect(lines.map((l) => JSON.parse(l)).find((l) => l.evt === "tool_schema_replaced")).toMatchObject({
      tool: "echo",
      from: "1",
      to: "2",
      msg: "rolling upgrade: tool schema replaced",
    });
    // Both versions serve side by side during the upgrade; once every runner stopped, the same version
    // with another schema may register again (no live runner holds it).
    await Promise.all(runners.splice(0).map((r) => r.stop({ graceMs: 0 })));
    const v2b = defineTool({ ...v2, description: "v2 again, reworded", parameters: v2.parameters, execute: () => "" });
    const nc2 = await connect({ servers: stack.nats.url });
    conns.push(nc2);
    const again = createToolRunner({
      nc: nc2,
      tools: [v2b],
      runnerId: "again-c",
      workspaceRoot: stack.workspaceRoot,
      logger,
    });
    expect(await again.start()).toEqual({ ok: true });
    runners.push(again);
    expect(lines.map((l) => JSON.parse(l)).find((l) => l.evt === "tool_registration_replaced")).toMatchObject({
      tool: "echo",
      version: "2",
      previousRunner: "new-b",
    });
  });

  it("on stop, a running retry:safe call goes back to the queue and another runner completes it", async () => {
    const first = await startRunner("stop-a");
    await publishCall(stack.js, { sessionId: "s-stop", toolCallId: "c1", toolName: "sleep_safe", args: { ms: 1_500 } });
    await waitForRecord(stack, "s-stop", "c1", "started");
    await until(async () => (await executions(stack, "s-stop")).length === 1, 10_000, "execution began");
    await startRunner("stop-b");
    await first.stop({ graceMs: 100 });
    const records = await waitForResult(stack, "s-stop", "c1");
    expect(records.filter((r) => r.record.kind === "started").map((r) => r.runnerId)).toEqual(["stop-a", "stop-b"]);
    expect(finalOf(records)).toMatchObject({ isError: false });
    expect(records.at(-1)?.runnerId).toBe("stop-b");
    expect(await executions(stack, "s-stop")).toHaveLength(2);
  });

  it("on stop, a running retry:never call gets the runner-lost error result", async () => {
    const first = await startRunner("stopn-a");
    await publishCall(stack.js, {
      sessionId: "s-stopn",
      toolCallId: "c1",
      toolName: "sleep_never",
      args: { ms: 5_000 },
    });
    await waitForRecord(stack, "s-stopn", "c1", "started");
    await until(async () => (await executions(stack, "s-stopn")).length === 1, 10_000, "execution began");
    await first.stop({ graceMs: 100 });
    const records = await waitForResult(stack, "s-stopn", "c1");
    expect(textOf(records)).toBe("Tool runner lost while executing sleep_never");
    expect(await executions(stack, "s-stopn")).toHaveLength(1);
    expect(await consumerCounts(stack, "sleep_never")).toEqual({ pending: 0, ackPending: 0 });
  });

  it("serves tools given after start (setTools): registered, in its presence, pulled; removed ones are not", async () => {
    const shout = defineTool({
      name: "shout_late",
      description: "Upper-cases its text",
      parameters: z.object({ text: z.string() }),
      execute: ({ text }) => text.toUpperCase(),
    });
    // ack_wait far past the test's waits: a call left in a pull no one reads would stay claimed.
    const runner = await startRunner("late-a", { tools: [echoTool], ackWaitMs: 60_000 });
    expect(await stack.topo.kv.tools.get("shout_late")).toBeNull();
    expect(await runner.setTools([echoTool, shout])).toEqual({ ok: true });
    expect(runner.tools().map((t) => t.name)).toEqual(["echo", "shout_late"]);
    expect((await stack.topo.kv.tools.get("shout_late"))?.json()).toMatchObject({ runnerId: "late-a" });
    const presence = (await stack.topo.kv.leases.get(runnerPresenceKey("late-a")))?.json<{ tools: object }>();
    expect(Object.keys(presence?.tools ?? {}).sort()).toEqual(["echo", "shout_late"]);
    await publishCall(stack.js, {
      sessionId: "s-late",
      toolCallId: "c1",
      toolName: "shout_late",
      args: { text: "hi" },
    });
    expect(textOf(await waitForResult(stack, "s-late", "c1"))).toBe("HI");

    expect(await runner.setTools([echoTool])).toEqual({ ok: true });
    // Published at once: the pull the runner made before the removal is still on the server (2.9
    // cannot cancel one; it expires in 5 s) and may be handed the call. The runner hands it back,
    // so it waits unclaimed on the consumer, not for ack_wait (60 s here) in an inbox no one reads.
    await publishCall(stack.js, {
      sessionId: "s-late",
      toolCallId: "c2",
      toolName: "shout_late",
      args: { text: "no" },
    });
    await sleep(1_500);
    expect(await readRecords(stack, "s-late", "c2")).toEqual([]);
    await sleep(4_000);
    expect(await readRecords(stack, "s-late", "c2")).toEqual([]);
    // Served again: the waiting call is run at once, not after ack_wait.
    expect(await runner.setTools([echoTool, shout])).toEqual({ ok: true });
    expect(textOf(await waitForResult(stack, "s-late", "c2", 10_000))).toBe("NO");
  });
});
