// Shared helpers of the tool-runner integration tests (real nats-server via @fleet/testkit).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  decodeToolResultRecord,
  encodeToolCallRequest,
  STREAMS,
  subjects,
  type ToolResultRecord,
  toolCallMsgId,
} from "@fleet/protocol";
import { applyTopology, type Topology } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { RUNNER_ID_HEADER } from "@fleet/tools";
import { type JetStreamClient, jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { nodeArgsFor } from "../support/node-entry.js";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export interface Stack {
  nats: NatsServer;
  nc: NatsConnection;
  js: JetStreamClient;
  topo: Topology;
  workspaceRoot: string;
  stop(): Promise<void>;
}

/** A fresh nats-server with Fleet's topology (short lease TTL so dead runners expire fast). */
export async function startStack(opts: { leaseTtlMs?: number } = {}): Promise<Stack> {
  const nats = await startNats();
  const nc = await connect({ servers: nats.url });
  const topo = await applyTopology(nc, { leaseTtlMs: opts.leaseTtlMs ?? 1_500 });
  const workspaceRoot = await mkdtemp(join(tmpdir(), "fleet-tools-ws-"));
  return {
    nats,
    nc,
    js: jetstream(nc),
    topo,
    workspaceRoot,
    async stop() {
      await nc.close();
      await nats.stop();
      await rm(workspaceRoot, { recursive: true, force: true });
    },
  };
}

export interface CallSpec {
  sessionId: string;
  toolCallId: string;
  toolName: string;
  args: unknown;
  /** Epoch ms; default now + 60 s. */
  deadline?: number;
}

/** Publishes a tool call like the loop does (msgID `<sid>.<toolCallId>`). Returns the PubAck. */
export function publishCall(js: JetStreamClient, call: CallSpec, msgID?: string) {
  const encoded = encodeToolCallRequest({ runId: "run-1", deadline: Date.now() + 60_000, ...call });
  if (!encoded.ok) throw new Error(encoded.error);
  return js.publish(subjects.toolCall(call.toolName), encoded.bytes, {
    msgID: msgID ?? toolCallMsgId(call.sessionId, call.toolCallId),
  });
}

export interface SeenRecord {
  seq: number;
  runnerId: string | undefined;
  record: ToolResultRecord;
  /** When the stream stored it (epoch ms). */
  at: number;
}

/** Every record of one call, in stream order. */
export async function readRecords(stack: Stack, sessionId: string, toolCallId: string): Promise<SeenRecord[]> {
  const out: SeenRecord[] = [];
  const subject = subjects.toolResult(sessionId, toolCallId);
  const consumer = await stack.js.consumers.get(STREAMS.toolResults.name, { filter_subjects: subject });
  const last = await stack.topo.jsm.streams
    .getMessage(STREAMS.toolResults.name, { last_by_subj: subject })
    .catch(() => null);
  if (!last) return out;
  const messages = await consumer.consume();
  for await (const m of messages) {
    const decoded = decodeToolResultRecord(m.data);
    if (!decoded.ok) throw new Error(decoded.error);
    out.push({
      seq: m.seq,
      runnerId: m.headers?.get(RUNNER_ID_HEADER) || undefined,
      record: decoded.value,
      at: Math.floor(m.info.timestampNanos / 1_000_000),
    });
    if (m.seq >= last.seq) break;
  }
  await messages.close();
  return out;
}

/** Waits until the call has a `result` record; returns all its records. */
export async function waitForResult(stack: Stack, sessionId: string, toolCallId: string, timeoutMs = 20_000) {
  const subject = subjects.toolResult(sessionId, toolCallId);
  const end = Date.now() + timeoutMs;
  for (;;) {
    const last = await stack.topo.jsm.streams
      .getMessage(STREAMS.toolResults.name, { last_by_subj: subject })
      .catch(() => null);
    if (last) {
      const decoded = decodeToolResultRecord(last.data);
      if (decoded.ok && decoded.value.kind === "result") return readRecords(stack, sessionId, toolCallId);
    }
    if (Date.now() > end) throw new Error(`no result for ${sessionId}.${toolCallId} within ${timeoutMs} ms`);
    await sleep(20);
  }
}

/** Waits until the call has at least one record (e.g. `started`). */
export async function waitForRecord(
  stack: Stack,
  sessionId: string,
  toolCallId: string,
  kind: ToolResultRecord["kind"],
  timeoutMs = 20_000,
) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const records = await readRecords(stack, sessionId, toolCallId);
    const hit = records.find((r) => r.record.kind === kind);
    if (hit) return hit;
    if (Date.now() > end) throw new Error(`no ${kind} record for ${sessionId}.${toolCallId}`);
    await sleep(20);
  }
}

export const finalOf = (records: SeenRecord[]) => {
  const final = records.at(-1)?.record;
  if (final?.kind !== "result") throw new Error("last record is not a result");
  return final;
};

export const textOf = (records: SeenRecord[]) =>
  finalOf(records)
    .content.map((b) => (b.type === "text" ? b.text : `[${b.type}]`))
    .join("\n");

/** Lines of `<workspace>/<sid>/executions.log` (one per execution of a test tool). */
export async function executions(stack: Stack, sessionId: string): Promise<string[]> {
  const text = await readFile(join(stack.workspaceRoot, sessionId, "executions.log"), "utf-8").catch(() => "");
  return text.split("\n").filter(Boolean);
}

/** Stored message counts of the tool consumer (`pending`: undelivered, `ackPending`: delivered, unacked). */
export async function consumerCounts(stack: Stack, tool: string) {
  const info = await stack.topo.jsm.consumers.info(STREAMS.toolCalls.name, `tool-${tool}`);
  return { pending: info.num_pending, ackPending: info.num_ack_pending };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until(cond: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = "condition") {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await sleep(20);
  }
}

export interface RunnerProcess {
  proc: ChildProcess;
  runnerId: string;
  output(): string;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
}

/**
 * Runs a tool runner as a child process (`nodeArgsFor`, one process, so its pid is the
 * runner's): the test tools plus the built-ins by default, or `services/tools/src/main.ts`.
 */
export async function spawnRunner(
  stack: Stack,
  runnerId: string,
  opts: { entry?: "test" | "main" | "example"; env?: Record<string, string>; waitReady?: boolean } = {},
): Promise<RunnerProcess> {
  const entry = join(
    REPO,
    opts.entry === "main"
      ? "services/tools/src/main.ts"
      : opts.entry === "example"
        ? "examples/tool-runner/src/main.ts"
        : "test/tools/fixtures/runner-entry.ts",
  );
  const proc = spawn(process.execPath, nodeArgsFor(entry), {
    cwd: REPO,
    env: {
      ...process.env,
      NATS_URL: stack.nats.url,
      FLEET_WORKSPACE: stack.workspaceRoot,
      FLEET_RUNNER_ID: runnerId,
      FLEET_OPS_PORT: "0",
      LOG_LEVEL: "info",
      ...opts.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = captureOutput(proc);
  const exited = new Promise<number | string>((res) => proc.once("exit", (code, signal) => res(code ?? signal ?? -1)));
  const runner = { proc, runnerId, output, exited };
  if (opts.waitReady !== false) {
    let exitedEarly = false;
    void exited.then(() => {
      exitedEarly = true;
    });
    await until(() => output().includes('"evt":"ops_listening"') || exitedEarly, 20_000, `runner ${runnerId} ready`);
    if (exitedEarly) throw new Error(`runner ${runnerId} exited early:\n${output()}`);
  }
  return runner;
}

/** Everything a child process wrote to stdout and stderr so far. */
export function captureOutput(proc: ChildProcess): () => string {
  let out = "";
  proc.stdout?.on("data", (d) => {
    out += d;
  });
  proc.stderr?.on("data", (d) => {
    out += d;
  });
  return () => out;
}

/** SIGTERM (SIGKILL after 15 s) a runner process that is still running, and waits for its exit. */
export async function stopRunnerProcess(p: RunnerProcess): Promise<void> {
  if (p.proc.exitCode !== null || p.proc.signalCode !== null) return;
  p.proc.kill("SIGTERM");
  const timer = setTimeout(() => p.proc.kill("SIGKILL"), 15_000);
  await p.exited;
  clearTimeout(timer);
}
