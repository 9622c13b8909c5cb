import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../define-tool.js";
import { createMemoryBlobSink } from "../memory-blob-sink.js";
import { createUnavailableSandbox } from "../sandbox/process-sandbox.js";
import { type ExecuteCallInput, executeCall } from "./execute-call.js";

const sleepy = defineTool({
  name: "sleepy",
  description: "",
  parameters: z.object({ ms: z.number(), honour: z.boolean().default(true) }),
  execute: ({ ms, honour }, ctx) =>
    new Promise((resolve, reject) => {
      ctx.onUpdate({ step: 1 });
      const t = setTimeout(() => resolve("slept"), ms);
      if (honour) {
        ctx.signal.addEventListener("abort", () => {
          clearTimeout(t);
          reject(new Error("stopped by signal"));
        });
      }
    }),
});

const failing = defineTool({
  name: "failing",
  description: "",
  parameters: z.object({}),
  execute: () => {
    throw new Error("disk on fire");
  },
});

function input(overrides: Partial<ExecuteCallInput>): ExecuteCallInput {
  return {
    tool: sleepy,
    args: { ms: 1 },
    sessionId: "s-1",
    toolCallId: "tc-1",
    workspace: "/tmp",
    logger: pino({ level: "silent" }),
    blobs: createMemoryBlobSink(),
    sandbox: createUnavailableSandbox("bwrap", "these tools start no process"),
    deadlineAt: Date.now() + 60_000,
    deadlineMs: 60_000,
    now: Date.now,
    signal: new AbortController().signal,
    onUpdate: () => {},
    abortGraceMs: 200,
    ...overrides,
  };
}

/** `sleepy`'s schema with an execute that only counts its runs. */
function probeTool() {
  const probe = {
    ...sleepy,
    runs: 0,
    execute: () => {
      probe.runs++;
      return "ran";
    },
  };
  return probe;
}

const text = (t: string) => ({ kind: "result", content: [{ type: "text", text: t }], details: {}, isError: true });

describe("executeCall", () => {
  it("returns the tool's result and forwards updates", async () => {
    const updates: unknown[] = [];
    const out = await executeCall(input({ onUpdate: (p) => updates.push(p) }));
    expect(out).toEqual({
      kind: "done",
      record: { kind: "result", content: [{ type: "text", text: "slept" }], isError: false },
    });
    expect(updates).toEqual([{ step: 1 }]);
  });

  it("gives pi's validation error without executing", async () => {
    const out = await executeCall(input({ args: { ms: "soon" } }));
    expect(out).toEqual({
      kind: "done",
      validationFailed: true,
      record: text(
        'Validation failed for tool "sleepy":\n  - ms: Invalid input: expected number, received string\n\nReceived arguments:\n{\n  "ms": "soon"\n}',
      ),
    });
  });

  it("refuses arguments over the size limit without validating or executing, naming the limit", async () => {
    const probe = probeTool();
    // {"ms":1,"pad":"xxx…"}: 17 bytes of framing around the padding.
    const args = (bytes: number) => ({ ms: 1, pad: "x".repeat(bytes - 17) });
    expect(JSON.stringify(args(2_000))).toHaveLength(2_000);
    expect(await executeCall(input({ tool: probe, args: args(2_000), maxArgsBytes: 2_000 }))).toMatchObject({
      kind: "done",
      record: { content: [{ type: "text", text: "ran" }] },
    });
    expect(probe.runs).toBe(1);
    expect(await executeCall(input({ tool: probe, args: args(2_001), maxArgsBytes: 2_000 }))).toEqual({
      kind: "done",
      validationFailed: true,
      record: text(
        "Tool sleepy was not run: its arguments JSON is 2001 bytes; the limit is 2000 (FLEET_MAX_TOOL_ARGS_BYTES)",
      ),
    });
    expect(probe.runs).toBe(1);
  });

  it("turns a thrown error into an error result with the message verbatim", async () => {
    expect(await executeCall(input({ tool: failing, args: {} }))).toEqual({
      kind: "done",
      record: text("disk on fire"),
    });
  });

  it("aborts at the deadline with the deadline error", async () => {
    const t0 = Date.now();
    const out = await executeCall(input({ args: { ms: 5_000 }, deadlineAt: Date.now() + 100, deadlineMs: 100 }));
    expect(out).toEqual({
      kind: "aborted",
      cause: "deadline",
      record: text("Tool sleepy exceeded its deadline of 100 ms"),
    });
    expect(Date.now() - t0).toBeLessThan(1_000);
  });

  it("gives a tool that reports progress its whole budget again each time (extendDeadline)", async () => {
    const progressing = defineTool({
      name: "progressing",
      description: "",
      parameters: z.object({}),
      execute: async (_args, ctx) => {
        for (let i = 0; i < 5; i++) {
          await new Promise((resolve) => setTimeout(resolve, 60));
          ctx.extendDeadline?.();
        }
        return "done after 300 ms";
      },
    });
    const out = await executeCall(
      input({ tool: progressing, args: {}, deadlineAt: Date.now() + 150, deadlineMs: 150 }),
    );
    expect(out).toEqual({
      kind: "done",
      record: { kind: "result", content: [{ type: "text", text: "done after 300 ms" }], isError: false },
    });
    // Without progress the same budget ends it.
    const silent = await executeCall(input({ args: { ms: 300 }, deadlineAt: Date.now() + 150, deadlineMs: 150 }));
    expect(silent.kind).toBe("aborted");
  });

  it("does not start a call whose deadline passed while it waited", async () => {
    const probe = probeTool();
    const out = await executeCall(input({ tool: probe, deadlineAt: Date.now() - 1, deadlineMs: 50 }));
    expect(out).toEqual({
      kind: "aborted",
      cause: "deadline",
      record: text("Tool sleepy exceeded its deadline of 50 ms"),
    });
    expect(probe.runs).toBe(0);
  });

  it("a cancel gives Operation aborted; a tool ignoring the signal is abandoned after the grace", async () => {
    const controller = new AbortController();
    const pending = executeCall(
      input({ args: { ms: 5_000, honour: false }, signal: controller.signal, abortGraceMs: 100 }),
    );
    setTimeout(() => controller.abort("cancel"), 50);
    const t0 = Date.now();
    expect(await pending).toEqual({ kind: "aborted", cause: "cancel", record: text("Operation aborted") });
    expect(Date.now() - t0).toBeLessThan(1_000);
  });

  it("reports a shutdown abort as such", async () => {
    const controller = new AbortController();
    controller.abort("shutdown");
    expect(await executeCall(input({ signal: controller.signal }))).toEqual({
      kind: "aborted",
      cause: "shutdown",
      record: text("Operation aborted"),
    });
  });
});
