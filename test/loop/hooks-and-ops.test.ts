import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LoopWorker } from "@fleet/loop";
import { createScriptedProvider, loadPluginHooks, type ScriptStep } from "@fleet/loop";
import { encodeToolRegistration, KV_BUCKETS, runnerPresenceKey, STREAMS } from "@fleet/protocol";
import type { NatsServer } from "@fleet/testkit";
import { defineTool } from "@fleet/tools";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type commander, startLoopStack } from "../support/loop-harness.js";
import { spawnLoop, waitForLog } from "../support/loop-process.js";

let server: NatsServer;
let worker: LoopWorker;
let nc: NatsConnection;
let cmd: ReturnType<typeof commander>;

const echo = defineTool({
  name: "echo",
  description: "echoes",
  parameters: z.object({ text: z.string() }),
  async execute(args) {
    return { content: [{ type: "text", text: `echo ${args.text}` }] };
  },
});

let stack: Awaited<ReturnType<typeof startLoopStack>>;
beforeAll(async () => {
  const plugins = await loadPluginHooks(join(import.meta.dirname, "fixtures/plugin-block-rm.mjs"));
  stack = await startLoopStack({ tools: [echo], worker: { toolPickupMs: 700, pluginHooks: plugins } });
  ({ server, worker, nc, cmd } = stack);
});
afterAll(async () => {
  await stack?.stop();
});

const script = (...steps: ScriptStep[]) => stack.scripted.use(createScriptedProvider({ steps, now: () => 1 }).streamFn);
const call = (id: string, name: string, args: Record<string, unknown>) => ({
  type: "toolCall" as const,
  id,
  name,
  arguments: args,
});
const ended = (ev: { type: string }[]) => ev.some((e) => e.type === "agent_end");
/** Result texts of the run's tool calls, in toolCallId order (blocked calls end during preflight, first). */
const endTexts = (events: import("@fleet/protocol").FleetEvent[]) =>
  events
    .flatMap((e) =>
      e.type === "tool_execution_end" ? [[e.toolCallId, (e.result.content[0] as { text: string }).text] as const] : [],
    )
    .sort((a, b) => a[0].localeCompare(b[0]))
    .map(([, text]) => text);

describe("loop service / hooks", () => {
  it("an in-process plugin (FLEET_PLUGINS) blocks a call and tags results", async () => {
    script({ content: [call("p1", "echo", { text: "hi" }), call("p2", "echo", { text: "rm -rf /" })] }, { text: "ok" });
    await cmd.send("hooks-1", { type: "prompt", text: "go" });
    const events = await cmd.waitFor("hooks-1", ended);
    expect(endTexts(events)).toEqual(["echo hi", "plugin: rm is not allowed"]);
    const first = events.find((e) => e.type === "tool_execution_end" && e.toolCallId === "p1");
    expect(first?.type === "tool_execution_end" && first.result.details).toMatchObject({ taggedBy: "plugin" });
  });

  it("a remote before_tool_call hook can block; a remote after_tool_call can rewrite the result", async () => {
    const before = nc.subscribe("fleet.hook.before_tool_call", {
      callback: (_e, m) => {
        const req = m.json<{ args: { text: string } }>();
        m.respond(
          JSON.stringify(req.args.text === "secret" ? { block: true, reason: "remote: secrets stay home" } : {}),
        );
      },
    });
    const after = nc.subscribe("fleet.hook.after_tool_call", {
      callback: (_e, m) => {
        m.respond(JSON.stringify({ content: [{ type: "text", text: "rewritten by remote hook" }] }));
      },
    });
    await nc.flush();
    try {
      script(
        { content: [call("r1", "echo", { text: "public" }), call("r2", "echo", { text: "secret" })] },
        { text: "ok" },
      );
      await cmd.send("hooks-2", { type: "prompt", text: "go" });
      const events = await cmd.waitFor("hooks-2", ended);
      expect(endTexts(events)).toEqual(["rewritten by remote hook", "remote: secrets stay home"]);
    } finally {
      before.unsubscribe();
      after.unsubscribe();
    }
  });

  it("a remote before_tool_call that does not answer in time blocks the call with a clear reason", async () => {
    const silent = nc.subscribe("fleet.hook.before_tool_call", { callback: () => undefined });
    await nc.flush();
    try {
      script({ content: [call("t1", "echo", { text: "x" })] }, { text: "ok" });
      await cmd.send("hooks-3", { type: "prompt", text: "go" });
      const events = await cmd.waitFor("hooks-3", ended);
      expect(endTexts(events)).toEqual(["Remote hook fleet.hook.before_tool_call timed out after 1000 ms"]);
    } finally {
      silent.unsubscribe();
    }
  });

  /** Registers a tool in KV `fleet_tools` and waits until the worker's registry shows it. */
  async function register(name: string) {
    const kv = await new Kvm(nc).open(KV_BUCKETS.tools.name);
    const reg = encodeToolRegistration({ name, description: "nobody runs me", parameters: { type: "object" } });
    if (!reg.ok) throw new Error(reg.error);
    await kv.put(name, reg.bytes);
    for (let i = 0; i < 50 && !worker.tools.get(name); i++) await new Promise((r) => setTimeout(r, 20));
  }

  it("a registered tool no live runner serves fails at once, naming the tool, and is not dispatched", async () => {
    await register("orphan");
    script({ content: [call("o1", "orphan", {})] }, { text: "ok" });
    await cmd.send("hooks-4", { type: "prompt", text: "go" });
    const events = await cmd.waitFor("hooks-4", ended);
    expect(endTexts(events)).toEqual(["No live tool runner serves orphan"]);
    const jsm = await jetstreamManager(nc);
    const calls = await jsm.streams.info(STREAMS.toolCalls.name, { subjects_filter: "fleet.tool.call.orphan" });
    expect(calls.state.subjects ?? {}).toEqual({});
  });

  it("a call a live runner does not pick up fails after the pickup time, naming the tool", async () => {
    await register("stuck");
    // A runner that announces `stuck` (its presence kept fresh) but never pulls its calls.
    const leases = await new Kvm(nc).open(KV_BUCKETS.leases.name);
    const presence = () =>
      leases.put(
        runnerPresenceKey("silent-runner"),
        JSON.stringify({
          runnerId: "silent-runner",
          tools: { stuck: { version: "1", schemaHash: "x" } },
          startedAt: 1,
          ts: Date.now(),
        }),
      );
    await presence();
    const beat = setInterval(() => void presence(), 300);
    try {
      await new Promise((r) => setTimeout(r, 100));
      script({ content: [call("s1", "stuck", {})] }, { text: "ok" });
      await cmd.send("hooks-5", { type: "prompt", text: "go" });
      const events = await cmd.waitFor("hooks-5", ended);
      expect(endTexts(events)).toEqual(["No tool runner picked up the call to stuck"]);
    } finally {
      clearInterval(beat);
      await leases.delete(runnerPresenceKey("silent-runner"));
    }
  });
});

describe("loop service / operations", () => {
  it("serves /healthz, /readyz and Prometheus /metrics with the loop's metrics", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fleet-ops-"));
    writeFileSync(join(dir, "s.json"), JSON.stringify({ turns: [{ text: "hi" }] }));
    const p = spawnLoop(
      {
        NATS_URL: server.url,
        FLEET_PROVIDER: "scripted",
        FLEET_SCRIPT: join(dir, "s.json"),
        FLEET_OPS_PORT: "0",
        FLEET_PARTITIONS: "16",
      },
      "loop-ops",
    );
    try {
      await waitForLog(p, "loop_started");
      const port = Number(/"opsPort":(\d+)/.exec(p.output())?.[1]);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      for (const name of [
        "fleet_loop_active_runs",
        "fleet_loop_events_appended_total",
        "fleet_loop_append_latency_seconds",
        "fleet_loop_llm_time_to_first_token_seconds",
        "fleet_loop_tool_latency_seconds",
        "fleet_loop_leases_held",
        "fleet_loop_command_lag_seconds",
        "fleet_loop_fenced_sessions_total",
      ]) {
        expect(metrics).toContain(name);
      }
      await p.kill("SIGTERM");
      expect(p.proc.exitCode).toBe(0);
    } finally {
      await p.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("an invalid setting exits with a clear message naming the variable", async () => {
    const p = spawnLoop({ NATS_URL: server.url, FLEET_LEASE_TTL_MS: "soon" }, "loop-badenv");
    await new Promise((r) => p.proc.once("exit", r));
    expect(p.proc.exitCode).toBe(2);
    expect(p.output()).toContain("FLEET_LEASE_TTL_MS");
    expect(p.output()).toContain('"soon"');
  });

  it("an unreachable NATS exits non-zero with one clear line", async () => {
    const p = spawnLoop({ NATS_URL: "nats://127.0.0.1:1" }, "loop-nonats");
    await new Promise((r) => p.proc.once("exit", r));
    expect(p.proc.exitCode).toBe(1);
    expect(p.output()).toMatch(/cannot connect to NATS at nats:\/\/127\.0\.0\.1:1/);
  });
});
