// Traces derived from the log, exported live over OTLP/HTTP by real loop worker processes to a real
// receiver: a run with a tool call whose worker is SIGKILLed mid-run exports one trace, child of the
// caller's traceparent, with the resume visible; `fleet trace export` sends the same spans again.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { partitionOf, subjects, ToolCallRequest, type TraceSpan } from "@fleet/protocol";
import { connectNats, createLogger } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { createToolRunner, defineTool, type ToolRunner } from "@fleet/tools";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { runCli } from "../client/support/run-cli.js";
import { commander } from "../support/loop-harness.js";
import { type LoopProcess, loopLeaseHolders, scriptedLoopEnv, spawnLoop, waitForLog } from "../support/loop-process.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.js";

const TTL = 1_000;
const CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN = "b7ad6b7169203331";
const TRACEPARENT = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;

let server: NatsServer;
let nc: NatsConnection;
let runnerNc: NatsConnection;
let runner: ToolRunner;
let receiver: OtlpReceiver;
let dir: string;
const procs: LoopProcess[] = [];
let executions = 0;
/** The runner's own spans (what its OTLP exporter would send). */
const runnerSpans: TraceSpan[] = [];
/** The job runs until the test releases it: the worker is killed, and the run resumed, while it runs. */
let release: () => void = () => undefined;
const released = new Promise<void>((resolve) => {
  release = resolve;
});

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "otlp-crash-test" });
  receiver = await startOtlpReceiver();
  dir = mkdtempSync(join(tmpdir(), "fleet-otlp-"));
  const job = defineTool({
    name: "slowjob",
    description: "runs until released",
    parameters: z.object({}),
    execute: async () => {
      executions++;
      await released;
      return { content: [{ type: "text", text: "job done" }] };
    },
  });
  runnerNc = await connectNats({ url: server.url, name: "otlp-runner" });
  runner = createToolRunner({
    nc: runnerNc,
    tools: [job],
    onCallSpan: (span) => runnerSpans.push(span),
    workspaceRoot: dir,
    logger: createLogger("t", { level: "silent" }),
  });
  await runner.start();
  writeFileSync(
    join(dir, "script.json"),
    JSON.stringify({
      turns: [{ content: [{ type: "toolCall", id: "job", name: "slowjob", arguments: {} }] }, { text: "all done" }],
    }),
  );
});
afterAll(async () => {
  for (const p of procs) await p.kill("SIGKILL");
  release();
  await runner?.stop();
  await runnerNc?.close();
  await nc?.close();
  await receiver?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const otelEnv = () => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
  OTEL_EXPORTER_OTLP_HEADERS: "x-test-tenant=acme",
  OTEL_SERVICE_NAME: "fleet-loop-test",
  OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test",
  OTEL_BSP_SCHEDULE_DELAY: "100",
});

async function until<T>(what: string, get: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = get();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

describe("traces / live OTLP export across a worker crash", () => {
  it("one trace under the caller's span: chat, execute_tool, resume_run and the resumed chat", async () => {
    const env = { ...scriptedLoopEnv(server.url, join(dir, "script.json"), TTL), ...otelEnv() };
    const a = spawnLoop(env, "loop-a");
    const b = spawnLoop(env, "loop-b");
    procs.push(a, b);
    await waitForLog(a, "loop_started", 90_000);
    await waitForLog(b, "loop_started", 90_000);
    expect(a.output()).toContain('"spanExport":true');
    let held = new Map<number, string>();
    for (let i = 0; i < 100; i++) {
      held = await loopLeaseHolders(nc);
      const ws = new Set(held.values());
      if (held.size === 16 && ws.has("loop-a") && ws.has("loop-b")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    let victim = "";
    for (let i = 0; !victim; i++) if (held.get(partitionOf(`traced-${i}`, 16)) === "loop-b") victim = `traced-${i}`;

    // The tool call request the runner gets carries the execute_tool span's context.
    const requests: ToolCallRequest[] = [];
    const sub = nc.subscribe(subjects.toolCall("slowjob"), {
      callback: (_err, msg) => {
        requests.push(ToolCallRequest.parse(msg.json()));
      },
    });

    const cmd = commander(nc);
    await cmd.send(victim, { type: "prompt", text: "run the job", traceparent: TRACEPARENT, tracestate: "vendor=1" });
    await cmd.waitFor(victim, (ev) => ev.some((e) => e.type === "tool_execution_start"), 20_000);
    // The first LLM call was exported live by loop-b before it dies.
    await until("first chat span", () => byName(receiver.spans, "chat scripted-demo")[0]);
    await b.kill("SIGKILL");
    await cmd.waitFor(victim, (ev) => ev.some((e) => e.type === "run_resumed"), 30_000);
    release();
    const events = await cmd.waitFor(victim, (ev) => ev.some((e) => e.type === "agent_end"), 30_000);
    expect(events.map((e) => e.type)).toContain("run_resumed");
    expect(executions).toBe(1);
    const runId = events.find((e) => e.type === "agent_start")!.meta.runId!;
    const started = events.find((e) => e.type === "tool_execution_start");
    const toolCallId = started?.type === "tool_execution_start" ? started.toolCallId : "";

    const root = await until("invoke_agent span", () => byName(receiver.spans, "invoke_agent fleet")[0]);
    await new Promise((r) => setTimeout(r, 500));
    sub.unsubscribe();
    const trace = receiver.spans.filter((s) => s.attributes["fleet.run.id"] === runId);
    expect(receiver.rejected).toEqual([]);

    // One trace, the caller's; the run's root is the child of the caller's span.
    expect(new Set(trace.map((s) => s.traceId))).toEqual(new Set([CALLER_TRACE]));
    expect(root.parentSpanId).toBe(CALLER_SPAN);
    expect(root.kind).toBe(1);
    expect(root.traceState).toBe("vendor=1");
    expect(root.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.conversation.id": victim,
      "gen_ai.provider.name": "scripted",
      "gen_ai.request.model": "scripted-demo",
      "fleet.llm_calls": 2,
      "fleet.tool_calls": 1,
    });
    expect(root.events.map((e) => e.name)).toEqual(["fleet.run_resumed"]);
    expect(root.resource).toMatchObject({ "service.name": "fleet-loop-test", "deployment.environment": "test" });
    expect(root.scope).toBe("fleet");
    expect(receiver.headers.every((h) => h["x-test-tenant"] === "acme")).toBe(true);

    // Every other span is a child of the root; each exported once.
    const children = trace.filter((s) => s !== root);
    expect(children.every((s) => s.parentSpanId === root.spanId)).toBe(true);
    expect(new Set(trace.map((s) => s.spanId)).size).toBe(trace.length);
    expect(children.map((s) => s.name).sort()).toEqual([
      "chat scripted-demo",
      "chat scripted-demo",
      "execute_tool slowjob",
      "resume_run",
    ]);

    const [chat1, chat2] = byName(trace, "chat scripted-demo").sort((x, y) => x.startMs - y.startMs);
    expect(chat1!.kind).toBe(3);
    expect(chat1!.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "scripted",
      "gen_ai.request.model": "scripted-demo",
      "gen_ai.response.finish_reasons": ["toolUse"],
    });
    expect(typeof chat1!.attributes["gen_ai.usage.input_tokens"]).toBe("number");
    expect(typeof chat1!.attributes["gen_ai.usage.output_tokens"]).toBe("number");
    expect(typeof chat1!.attributes["fleet.time_to_first_token"]).toBe("number");
    expect(chat2!.attributes["gen_ai.response.finish_reasons"]).toEqual(["stop"]);

    const tool = byName(trace, "execute_tool slowjob")[0]!;
    expect(tool.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "slowjob",
      "gen_ai.tool.call.id": toolCallId,
    });
    expect(requests.map((r) => r.traceparent)).toContain(`00-${CALLER_TRACE}-${tool.spanId}-01`);
    expect(requests.every((r) => r.tracestate === "vendor=1")).toBe(true);
    // The runner's side: its execute_tool span is the child of the loop's, in the same trace.
    await until("runner span", () => runnerSpans[0]);
    expect(runnerSpans).toHaveLength(1);
    expect(runnerSpans[0]).toMatchObject({
      traceId: CALLER_TRACE,
      parentSpanId: tool.spanId,
      name: "execute_tool slowjob",
      attributes: { "gen_ai.tool.call.id": toolCallId, "fleet.tool.outcome": "ok" },
    });

    // On the time axis: first call, tool (the crash comes while it runs), the gap until loop-a resumes, last call.
    const resume = byName(trace, "resume_run")[0]!;
    expect(resume.attributes["fleet.worker.id"]).toBe("loop-a");
    expect(chat1!.endMs).toBeLessThanOrEqual(tool.startMs);
    expect(tool.startMs).toBeLessThanOrEqual(resume.startMs);
    expect(resume.endMs - resume.startMs).toBeGreaterThan(0);
    expect(resume.endMs).toBeLessThanOrEqual(chat2!.startMs);
    expect(root.startMs).toBeLessThanOrEqual(chat1!.startMs);
    expect(root.endMs).toBeGreaterThanOrEqual(chat2!.endMs);

    // `fleet trace export` sends the past run again: the same ids.
    const before = receiver.spans.length;
    const exported = await runCli(["--nats", server.url, "trace", "export", victim, "--run", runId], {
      env: { ...otelEnv(), OTEL_SERVICE_NAME: "fleet-cli-test" },
      timeoutMs: 60_000,
    });
    expect(exported.stderr).toBe("");
    expect(exported.code).toBe(0);
    expect(exported.stdout).toContain(`sent ${trace.length} span(s) of 1 run(s)`);
    const again = receiver.spans.slice(before);
    expect(again.map((s) => s.spanId).sort()).toEqual(trace.map((s) => s.spanId).sort());
    expect(again.every((s) => s.resource["service.name"] === "fleet-cli-test")).toBe(true);

    // `fleet trace` draws the same run.
    const drawn = await runCli(["--nats", server.url, "trace", victim], { timeoutMs: 60_000 });
    expect(drawn.code).toBe(0);
    expect(drawn.stdout).toContain(`run ${runId}  invoke_agent fleet`);
    expect(drawn.stdout).toContain(`trace ${CALLER_TRACE}  parent span ${CALLER_SPAN}`);
    expect(drawn.stdout).toMatch(/execute_tool slowjob\s+[ █]+\s+\d\.\d\d s/);
    expect(drawn.stdout).toContain("resume_run");

    await a.kill("SIGTERM");
  }, 240_000);
});
