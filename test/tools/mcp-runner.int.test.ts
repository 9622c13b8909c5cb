// The tool runner process (services/tools/src/main.ts) serving a real MCP server from npm through
// FLEET_MCP_CONFIG, against a real nats-server: registration, exactly-once calls, progress, cancel, restart.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { decodeRunnerPresence, runnerPresenceKey, subjects } from "@fleet/protocol";
import { processesMatching } from "@fleet/tools/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EVERYTHING, everythingStdio } from "./mcp-support.js";
import {
  finalOf,
  publishCall,
  type RunnerProcess,
  type Stack,
  spawnRunner,
  startStack,
  stopRunnerProcess,
  textOf,
  until,
  waitForRecord,
  waitForResult,
} from "./support.js";

describe("a tool runner serving MCP servers (FLEET_MCP_CONFIG, real processes)", () => {
  let stack: Stack;
  let runner: RunnerProcess;
  const marker = `--fleet-runner-${process.pid}-${Date.now()}`;
  const serverPids = () =>
    processesMatching(new RegExp(`^${process.execPath} \\S+server-everything/dist/index\\.js stdio ${marker}$`));

  beforeAll(async () => {
    stack = await startStack();
    const config = join(stack.workspaceRoot, "mcp.json");
    await writeFile(
      config,
      JSON.stringify({ mcpServers: { everything: everythingStdio({ args: [EVERYTHING, "stdio", marker] }) } }),
    );
    runner = await spawnRunner(stack, "mcp-a", {
      entry: "main",
      env: { FLEET_TOOLS: "read", FLEET_MCP_CONFIG: config, LOG_LEVEL: "debug", FLEET_MCP_RESTART_MS: "3000" },
    });
  });
  afterAll(async () => {
    if (runner) await stopRunnerProcess(runner);
    await stack?.stop();
  });

  it("registers the server's tools in fleet_tools and its presence, beside the built-in ones", async () => {
    const echo = (await stack.topo.kv.tools.get("mcp__everything__echo"))?.json<Record<string, unknown>>();
    expect(echo).toMatchObject({
      name: "mcp__everything__echo",
      description: expect.stringMatching(/echo/i),
      parameters: { type: "object", properties: { message: { type: "string" } } },
      retry: "safe",
      runnerId: "mcp-a",
    });
    expect((await stack.topo.kv.tools.get("mcp__everything__toggle-simulated-logging"))?.json()).toMatchObject({
      retry: "never",
    });
    // Listed after the server's notifications/tools/list_changed (it adds the roots tool once initialised).
    await until(
      async () => (await stack.topo.kv.tools.get("mcp__everything__get-roots-list")) !== null,
      15_000,
      "list change registered",
    );
    const presence = await stack.topo.kv.leases.get(runnerPresenceKey("mcp-a"));
    const decoded = presence ? decodeRunnerPresence(presence.value) : undefined;
    expect(decoded?.ok && Object.keys(decoded.value.tools).sort()).toEqual(
      expect.arrayContaining(["read", "mcp__everything__echo", "mcp__everything__get-roots-list"]),
    );
  });

  it("runs a call once, with progress as update records that keep it past its deadline", async () => {
    await publishCall(stack.js, {
      sessionId: "s-mcp",
      toolCallId: "c-echo",
      toolName: "mcp__everything__echo",
      args: { message: "through the runner" },
    });
    const echo = await waitForResult(stack, "s-mcp", "c-echo");
    expect(echo.map((r) => r.record.kind)).toEqual(["started", "result"]);
    expect(textOf(echo)).toContain("through the runner");

    // A 1.5 s budget; the operation takes 3 s with progress every 0.5 s.
    const published = Date.now();
    await publishCall(stack.js, {
      sessionId: "s-mcp",
      toolCallId: "c-long",
      toolName: "mcp__everything__trigger-long-running-operation",
      args: { duration: 3, steps: 6 },
      deadline: published + 1_500,
    });
    const long = await waitForResult(stack, "s-mcp", "c-long", 30_000);
    expect(finalOf(long).isError).toBe(false);
    expect(textOf(long)).toContain("Long running operation completed");
    const updates = long.filter((r) => r.record.kind === "update").map((r) => r.record);
    expect(updates.length).toBeGreaterThanOrEqual(4);
    expect(updates[0]).toEqual({ kind: "update", partialResult: { progress: 1, total: 6 } });

    // The same call published again is not run again.
    await publishCall(
      stack.js,
      { sessionId: "s-mcp", toolCallId: "c-echo", toolName: "mcp__everything__echo", args: { message: "again" } },
      "s-mcp.c-echo.second",
    );
    await until(
      async () =>
        (await stack.topo.jsm.consumers.info("FLEET_TOOL_CALLS", "tool-mcp__everything__echo")).num_ack_pending === 0 &&
        (await stack.topo.jsm.consumers.info("FLEET_TOOL_CALLS", "tool-mcp__everything__echo")).num_pending === 0,
      10_000,
      "second request settled",
    );
    expect(textOf(await waitForResult(stack, "s-mcp", "c-echo"))).toContain("through the runner");
  });

  it("turns a cancel into notifications/cancelled and an aborted result", async () => {
    await publishCall(stack.js, {
      sessionId: "s-mcp",
      toolCallId: "c-cancel",
      toolName: "mcp__everything__trigger-long-running-operation",
      args: { duration: 30, steps: 30 },
    });
    await waitForRecord(stack, "s-mcp", "c-cancel", "update", 15_000);
    stack.nc.publish(subjects.toolCancel("s-mcp", "c-cancel"));
    const records = await waitForResult(stack, "s-mcp", "c-cancel", 10_000);
    expect(finalOf(records)).toMatchObject({ isError: true, content: [{ type: "text", text: "Operation aborted" }] });
    await until(() => runner.output().includes('"method":"notifications/cancelled"'), 5_000, "cancel sent");
  });

  it("survives the server being killed mid-call: an error result, fast failures while down, then a restart", async () => {
    const [pid] = serverPids();
    expect(pid).toBeDefined();
    await publishCall(stack.js, {
      sessionId: "s-kill",
      toolCallId: "c-1",
      toolName: "mcp__everything__trigger-long-running-operation",
      args: { duration: 30, steps: 30 },
    });
    await waitForRecord(stack, "s-kill", "c-1", "update", 15_000);
    process.kill(pid as number, "SIGKILL");
    const killed = await waitForResult(stack, "s-kill", "c-1", 10_000);
    expect(finalOf(killed).isError).toBe(true);
    expect(textOf(killed)).toMatch(/MCP server everything went away during the call/);

    const t0 = Date.now();
    await publishCall(stack.js, {
      sessionId: "s-kill",
      toolCallId: "c-2",
      toolName: "mcp__everything__echo",
      args: { message: "while down" },
    });
    const down = await waitForResult(stack, "s-kill", "c-2", 10_000);
    // Restarted after FLEET_MCP_RESTART_MS = 3 s: meanwhile calls fail at once.
    expect(finalOf(down).isError).toBe(true);
    expect(textOf(down)).toMatch(/MCP server everything is down \(.*\); restarting in \d+ ms/);
    expect(Date.now() - t0).toBeLessThan(3_000);
    await until(() => serverPids().length === 1 && serverPids()[0] !== pid, 20_000, "server restarted");
    await until(() => /"evt":"mcp_server_up"[^\n]*"restarts":1/.test(runner.output()), 20_000, "restart logged");
    await publishCall(stack.js, {
      sessionId: "s-kill",
      toolCallId: "c-3",
      toolName: "mcp__everything__echo",
      args: { message: "after the restart" },
    });
    expect(textOf(await waitForResult(stack, "s-kill", "c-3", 10_000))).toContain("after the restart");
  });
});
