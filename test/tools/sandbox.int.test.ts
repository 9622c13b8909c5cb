// The sandbox of tool processes end to end: real nats-server, real runners (in-process and as
// processes), real bwrap. Escape attempts on the file system are in services/tools (sandbox-escapes).
import { OBJECT_STORES } from "@fleet/protocol";
import { builtinTools, createToolRunner, sandboxSettings, type ToolRunner } from "@fleet/tools";
import { processesMatching } from "@fleet/tools/testing";
import { Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
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
  waitForResult,
} from "./support.js";

// NATS login settings are the runner's own (it logs in with them; see sandbox-env tests for their
// names): its NATS_URL is in its environment, and no NATS_* variable may reach bash.
const SECRETS = {
  REDIS_PASSWORD: "redis-pw-0f3c",
  GITHUB_TOKEN: "gh-token-9a1e",
  ANTHROPIC_API_KEY: "sk-ant-api-77d2",
  AWS_SECRET_ACCESS_KEY: "aws-secret-5b8c",
};

describe("tool sandbox (real bwrap, real nats-server)", () => {
  let stack: Stack;
  const procs: RunnerProcess[] = [];
  const runners: ToolRunner[] = [];
  const conns: NatsConnection[] = [];
  let call = 0;

  /** Publishes one bash call and returns its final record and text. */
  async function bash(sessionId: string, command: string, timeout?: number) {
    const toolCallId = `c${++call}`;
    await publishCall(stack.js, {
      sessionId,
      toolCallId,
      toolName: "bash",
      args: { command, ...(timeout ? { timeout } : {}) },
    });
    const records = await waitForResult(stack, sessionId, toolCallId, 30_000);
    return { final: finalOf(records), text: textOf(records) };
  }

  async function inProcessRunner(runnerId: string, sandbox: Parameters<typeof sandboxSettings>[0]) {
    const nc = await connect({ servers: stack.nats.url });
    conns.push(nc);
    const runner = createToolRunner({
      nc,
      tools: builtinTools,
      runnerId,
      workspaceRoot: stack.workspaceRoot,
      logger: pino({ level: "silent" }),
      sandbox: sandboxSettings(sandbox),
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
    for (const p of procs.splice(0)) await stopRunnerProcess(p);
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("bash cannot connect to the nats-server's port; with FLEET_SANDBOX_NETWORK=allow it can", async () => {
    const probe = `exec 3<>/dev/tcp/127.0.0.1/${stack.nats.port} && head -c 4 <&3 && echo " connected"`;
    await inProcessRunner("net-deny", {});
    const denied = await bash("s-net", probe);
    expect(denied.final).toMatchObject({ isError: true, details: { exitCode: 1 } });
    expect(denied.text).toContain(`/dev/tcp/127.0.0.1/${stack.nats.port}: Connection refused`);
    expect(denied.text).not.toContain("connected");
    await runners.pop()?.stop({ graceMs: 0 });

    // The control: the same command reaches the server when the network is shared.
    await inProcessRunner("net-allow", { network: "allow" });
    const allowed = await bash("s-net", probe);
    expect(allowed.text).toBe("INFO connected\n");
  });

  it("a runner process's secrets are not in the environment of bash, nor in its PID 1's", async () => {
    const runner = await spawnRunner(stack, "env-a", { entry: "main", env: SECRETS });
    procs.push(runner);
    const { text } = await bash("s-env", "env; echo ---; tr '\\0' '\\n' < /proc/1/environ; echo; ls /proc");
    for (const value of Object.values(SECRETS)) expect(text).not.toContain(value);
    expect(text).not.toMatch(/^NATS_/m);
    expect(text).toContain("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n");
  });

  it("a fork bomb and a memory hog are stopped by the limits, and the runner keeps serving", async () => {
    const runner = await spawnRunner(stack, "limits-a", {
      entry: "main",
      env: { FLEET_SANDBOX_MAX_PROCS: "32", FLEET_SANDBOX_MEMORY_MB: "256" },
    });
    procs.push(runner);
    expect(runner.output()).toMatch(/"evt":"sandbox_ready".*"processes":32/);
    const marker = `bomb${process.pid}x${Date.now() % 100_000}`;
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, processesMatching(marker).length);
    }, 20);
    const bomb = await bash("s-limits", `: ${marker}; b() { b | b & }; b; sleep 10`, 3).finally(() =>
      clearInterval(sampler),
    );
    expect(bomb.final).toMatchObject({ isError: true, details: { timedOut: true } });
    expect(peak).toBeGreaterThan(16);
    expect(peak).toBeLessThanOrEqual(32 + 2);
    expect(processesMatching(marker)).toEqual([]);

    const hog = await bash("s-limits", `awk 'BEGIN { s = "x"; for (;;) s = s s }'`);
    expect(hog.final).toMatchObject({ isError: true, details: { exitCode: 2 } });
    expect(hog.text).toMatch(/cannot allocate \d+ bytes of memory|out of memory/);

    expect((await bash("s-limits", "echo still serving")).text).toBe("still serving\n");
    expect(runner.proc.exitCode).toBeNull();
  });

  it("when the runner dies, every process of its running commands dies with it", async () => {
    const runner = await spawnRunner(stack, "die-a", { entry: "main" });
    procs.push(runner);
    const marker = `${process.pid}0${Date.now() % 100_000}`;
    await publishCall(stack.js, {
      sessionId: "s-die",
      toolCallId: "c1",
      toolName: "bash",
      args: { command: `sleep 70.${marker} & (sleep 71.${marker} &); wait` },
    });
    await until(() => processesMatching(new RegExp(`^sleep 7[01]\\.${marker}$`)).length === 2, 15_000);
    runner.proc.kill("SIGKILL");
    expect(await runner.exited).toBe("SIGKILL");
    await until(() => processesMatching(marker).length === 0, 5_000, "sandbox processes gone");
  });

  it("FLEET_SANDBOX=off: the runner warns at start and bash runs unconfined", async () => {
    const runner = await spawnRunner(stack, "off-a", { entry: "main", env: { FLEET_SANDBOX: "off" } });
    procs.push(runner);
    expect(runner.output()).toMatch(/"level":40[^\n]*"evt":"sandbox_off"/);
    const { text } = await bash("s-off", `exec 3<>/dev/tcp/127.0.0.1/${stack.nats.port} && head -c 4 <&3`);
    expect(text).toBe("INFO");
  });

  it("bwrap missing: the runner logs the failed check and bash gives an error result", async () => {
    const runner = await spawnRunner(stack, "nobwrap-a", {
      entry: "main",
      env: { FLEET_SANDBOX_BWRAP: "/nonexistent/bwrap" },
    });
    procs.push(runner);
    expect(runner.output()).toMatch(/"level":50[^\n]*"evt":"sandbox_unavailable","check":"bwrap"/);
    const { final, text } = await bash("s-nobwrap", "echo ran");
    expect(final.isError).toBe(true);
    expect(text).toBe(
      "bash cannot run: the process sandbox is unavailable (check bwrap: /nonexistent/bwrap is not an executable file). " +
        "Install bubblewrap (apt-get install bubblewrap), or set FLEET_SANDBOX=off on the tool runner to run processes without a sandbox.",
    );
  });

  it("oversize tool arguments get an error naming the limit; oversize results are truncated into fleet_blobs", async () => {
    const runner = await spawnRunner(stack, "size-a", {
      entry: "main",
      env: { FLEET_MAX_TOOL_ARGS_BYTES: "4096", FLEET_MAX_TOOL_RESULT_BYTES: "20000" },
    });
    procs.push(runner);
    const content = "y".repeat(5_000);
    await publishCall(stack.js, {
      sessionId: "s-size",
      toolCallId: "w1",
      toolName: "write",
      args: { path: "big.txt", content },
    });
    const size = JSON.stringify({ path: "big.txt", content }).length;
    expect(textOf(await waitForResult(stack, "s-size", "w1"))).toBe(
      `Tool write was not run: its arguments JSON is ${size} bytes; the limit is 4096 (FLEET_MAX_TOOL_ARGS_BYTES)`,
    );

    // One 30 kB line: under bash's own 50 kB / 2000-line cap, over the 20 kB result limit.
    const big = await bash("s-size", "head -c 30000 /dev/zero | tr '\\0' z");
    expect(big.text).toMatch(
      /\[Output truncated: the result is \d+ bytes, over the 20000-byte limit \(FLEET_MAX_TOOL_RESULT_BYTES\); \d+ of \d+ text bytes shown\. Full output: blob fleet_blobs\/tool-output\/s-size\/c\d+\/result\.json\]$/,
    );
    const ref = (big.final.details as { fullOutput: { name: string } }).fullOutput;
    const store = await new Objm(stack.nc).open(OBJECT_STORES.blobs.name);
    const stored = JSON.parse(new TextDecoder().decode((await store.getBlob(ref.name)) ?? new Uint8Array())) as {
      content: Array<{ text: string }>;
    };
    expect(stored.content[0]?.text).toBe("z".repeat(30_000));
  });
});
