// Test support for the loop service: an in-process worker with swappable providers, command
// publishing and event reading against a real nats-server.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StreamFn } from "@fleet/loop";
import { type LoopWorker, startLoopWorker } from "@fleet/loop";
import {
  decodeEvent,
  encodeCommand,
  type FleetCommand,
  type FleetEvent,
  partitionOf,
  STREAMS,
  sessionConfigWith,
  subjects,
} from "@fleet/protocol";
import { connectNats, createLogger, newId, readSubject } from "@fleet/runtime";
import { startNats } from "@fleet/testkit";
import { type AnyToolDefinition, createToolRunner } from "@fleet/tools";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { Registry } from "prom-client";

export interface SwitchableProvider {
  streamFn: StreamFn;
  use(fn: StreamFn): void;
}

/** A provider slot whose streamFn a test can replace between prompts. */
export function switchableProvider(): SwitchableProvider {
  let current: StreamFn | undefined;
  return {
    streamFn: (ctx, opts, signal) => {
      if (!current) throw new Error("no provider set");
      return current(ctx, opts, signal);
    },
    use(fn) {
      current = fn;
    },
  };
}

export async function startTestWorker(opts: {
  url: string;
  providers: Record<string, StreamFn>;
  workerId?: string;
  partitions?: number;
  leaseTtlMs?: number;
  coalesceMs?: number;
  approvalTools?: string[];
  defaultProvider?: string;
  toolPickupMs?: number;
  hookRecheckMs?: number;
  /** `FLEET_HOOK_SERVERS` (change 53), in order. */
  hookServers?: string[];
  pluginHooks?: import("@fleet/loop").EngineHooks[];
  lifecycle?: import("@fleet/loop").LoopLifecycleOptions;
  /** `FLEET_SNAPSHOT_EVERY` (default the loop's). */
  snapshotEvery?: number;
  /** `FLEET_SESSION_IDLE_MS` (default 60 s). */
  sessionIdleMs?: number;
  /** Sub-agents (`FLEET_SUBAGENT_*`, change 57); absent: no `agent` tool. */
  subAgents?: import("@fleet/loop").SubAgentSettings;
  /** Default: silent unless LOG_LEVEL says otherwise. */
  logger?: import("@fleet/runtime").Logger;
  /** Context window and prices per model (`ModelCatalog.info`); default the loop's Anthropic table. */
  modelInfo?: import("@fleet/loop").LoopWorkerOptions["modelInfo"];
}): Promise<{ worker: LoopWorker; nc: NatsConnection }> {
  const workerId = opts.workerId ?? `loop-test-${newId().slice(-6)}`;
  const nc = await connectNats({ url: opts.url, name: workerId });
  const worker = await startLoopWorker({
    nc,
    workerId,
    partitions: opts.partitions ?? 16,
    leaseTtlMs: opts.leaseTtlMs ?? 2_000,
    shutdownGraceMs: 2_000,
    sessionIdleMs: opts.sessionIdleMs ?? 60_000,
    toolPickupMs: opts.toolPickupMs ?? 5_000,
    ...(opts.pluginHooks ? { pluginHooks: opts.pluginHooks } : {}),
    providers: opts.providers,
    ...(opts.modelInfo ? { modelInfo: opts.modelInfo } : {}),
    settings: {
      coalesceMs: opts.coalesceMs ?? 0,
      coalesceDeltas: 64,
      hookTimeoutMs: 1_000,
      hookRecheckMs: opts.hookRecheckMs ?? 0,
      ...(opts.hookServers ? { hookServers: opts.hookServers } : {}),
      toolTimeoutMs: 20_000,
      approvalTools: new Set(opts.approvalTools ?? []),
      defaults: sessionConfigWith({
        model: { provider: opts.defaultProvider ?? "scripted", modelId: "test-model" },
        systemPrompt: "You are a test agent.",
      }),
    },
    logger: opts.logger ?? createLogger("fleet-loop-test", { level: process.env.LOG_LEVEL ?? "silent" }),
    registry: new Registry(),
    newId: () => newId(),
    ...(opts.lifecycle ? { lifecycle: opts.lifecycle } : {}),
    ...(opts.snapshotEvery !== undefined ? { snapshotEvery: opts.snapshotEvery } : {}),
    ...(opts.subAgents ? { subAgents: opts.subAgents } : {}),
  });
  return { worker, nc };
}

type CommandBody = FleetCommand extends infer C
  ? C extends FleetCommand
    ? Omit<C, "id" | "sessionId">
    : never
  : never;

/** Publishes commands and reads a session's events. */
export function commander(nc: NatsConnection, partitions = 16) {
  const js = jetstream(nc);
  return {
    async send(sessionId: string, body: CommandBody, id = newId()): Promise<string> {
      const cmd = { ...body, id, sessionId } as FleetCommand;
      const encoded = encodeCommand(cmd);
      if (!encoded.ok) throw new Error(encoded.error);
      await js.publish(subjects.command(partitionOf(sessionId, partitions), sessionId), encoded.bytes, { msgID: id });
      return id;
    },
    async sendRaw(sessionId: string, data: string | Uint8Array, msgID?: string): Promise<void> {
      await js.publish(subjects.command(partitionOf(sessionId, partitions), sessionId), data, msgID ? { msgID } : {});
    },
    async events(sessionId: string): Promise<FleetEvent[]> {
      const jsm = await jetstreamManager(nc);
      const out: FleetEvent[] = [];
      for await (const rec of readSubject(
        js,
        jsm,
        STREAMS.events.name,
        subjects.event(partitionOf(sessionId, partitions), sessionId),
      )) {
        const ev = decodeEvent(rec.data);
        if (!ev.ok) throw new Error(`undecodable event at ${rec.seq}: ${ev.error}`);
        out.push(ev.value);
      }
      return out;
    },
    /** Polls until `done(events)` holds; returns the events. */
    async waitFor(
      sessionId: string,
      done: (events: FleetEvent[]) => boolean,
      timeoutMs = 10_000,
    ): Promise<FleetEvent[]> {
      const deadline = Date.now() + timeoutMs;
      let events: FleetEvent[] = [];
      while (Date.now() < deadline) {
        events = await this.events(sessionId);
        if (done(events)) return events;
        await new Promise((r) => setTimeout(r, 40));
      }
      throw new Error(`timed out; events so far: ${events.map((e) => e.type).join(" ")}`);
    },
  };
}

export const countOf = (type: string) => (events: FleetEvent[]) => events.filter((e) => e.type === type).length;

/** pi-style notation of an event list: `ms:user`, `me:assistant`, `tool_start:t1` …, updates dropped. */
export function notation(events: readonly FleetEvent[]): string[] {
  const out: string[] = [];
  for (const e of events) {
    switch (e.type) {
      case "message_update":
        break;
      case "message_start":
        out.push(`ms:${e.message.role}`);
        break;
      case "message_end":
        out.push(`me:${e.message.role}${e.message.role === "assistant" ? `(${e.message.stopReason})` : ""}`);
        break;
      case "tool_execution_start":
        out.push(`tool_start:${e.toolName}`);
        break;
      case "tool_execution_end":
        out.push(`tool_end:${e.toolName}${e.isError ? "(err)" : ""}`);
        break;
      case "tool_execution_update":
        out.push(`tool_update:${e.toolName}`);
        break;
      default:
        out.push(e.type);
    }
  }
  return out;
}

/**
 * A whole stack for loop tests: a fresh nats-server, an in-process tool runner serving `tools` in a
 * temp workspace, and one loop worker whose `scripted` provider the test swaps. `stop()` stops all of
 * it and removes the workspace.
 */
export async function startLoopStack(opts: {
  tools: readonly AnyToolDefinition[];
  worker?: Omit<Parameters<typeof startTestWorker>[0], "url" | "providers">;
  providers?: Record<string, StreamFn>;
}) {
  const server = await startNats();
  const workspace = mkdtempSync(join(tmpdir(), "fleet-loop-ws-"));
  const runnerNc = await connectNats({ url: server.url, name: "test-runner" });
  const runner = createToolRunner({
    nc: runnerNc,
    tools: opts.tools,
    workspaceRoot: workspace,
    updateIntervalMs: 0,
    logger: createLogger("fleet-tools-test", { level: "silent" }),
  });
  const started = await runner.start();
  if (!started.ok) throw new Error(`tool runner did not start: ${JSON.stringify(started)}`);
  const scripted = switchableProvider();
  const { worker, nc } = await startTestWorker({
    url: server.url,
    providers: { scripted: scripted.streamFn, ...opts.providers },
    ...opts.worker,
  });
  return {
    server,
    worker,
    nc,
    scripted,
    workspace,
    cmd: commander(nc),
    async stop() {
      await worker.stop();
      await runner.stop({ graceMs: 0 });
      await runnerNc.close();
      await nc.close();
      await server.stop();
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}
