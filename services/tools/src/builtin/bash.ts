import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import type { BlobRef } from "@fleet/protocol";
import { z } from "zod";
import { defineTool, type ToolContext, type ToolOutput } from "../define-tool.js";
import { throwIfAborted } from "./abort.js";
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, formatSize, type Truncation, truncateTail } from "./truncate.js";

export interface BashToolOptions {
  /** Shell binary; default `/bin/bash`, else `/bin/sh`. */
  shell?: string;
  /** Bytes of output kept in the result (tail). Default 50 KB (pi). */
  maxOutputBytes?: number;
  maxOutputLines?: number;
  /** Full output kept for the blob store; beyond this the middle is dropped. Default 64 MB. */
  maxCaptureBytes?: number;
  /** SIGTERM → SIGKILL grace for the command's processes (unconfined; sandboxed, SIGTERM to bwrap ends them all). Default 500 ms. */
  killGraceMs?: number;
  /** Minimum interval between progress updates. Default 100 ms (pi). */
  updateIntervalMs?: number;
  /** Extra environment; nothing of the runner's environment is inherited (see the sandbox settings). */
  env?: Record<string, string>;
}

/** What a bash result carries in `details`. */
export interface BashDetails {
  /** Exit code, or null when the shell was killed by a signal. */
  exitCode: number | null;
  signal?: string;
  timedOut?: boolean;
  /** The sandbox stopped the command because the workspace went over its quota. */
  quotaExceeded?: boolean;
  truncation?: Truncation;
  /** The complete output (stdout and stderr, interleaved) in `fleet_blobs`, when truncated. */
  fullOutput?: BlobRef;
}

const BashArgs = z.object({
  command: z.string().describe("Bash command to execute"),
  timeout: z
    .number()
    .positive()
    .optional()
    .describe("Timeout in seconds (optional; the call's deadline still applies)"),
});

/**
 * `bash {command, timeout?}`: runs in the workspace through `ctx.sandbox` (bubblewrap; refuses with
 * an error result when the sandbox is unavailable). Abort and timeout end every process of the
 * command; so does the end of the shell, so no background process outlives its command. stdout and stderr stream as progress updates; the
 * result keeps the tail of the output and the full output goes to the blob store. A non-zero exit
 * is an error result (`Command exited with code N`) with `details.exitCode`.
 */
export function createBashTool(opts: BashToolOptions = {}) {
  const shell = opts.shell ?? (existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh");
  const maxBytes = opts.maxOutputBytes ?? DEFAULT_MAX_BYTES;
  const maxLines = opts.maxOutputLines ?? DEFAULT_MAX_LINES;
  return defineTool({
    name: "bash",
    description:
      `Execute a bash command in the workspace directory. Returns stdout and stderr. Output is truncated to the last ${maxLines} lines or ${maxBytes / 1024}KB ` +
      "(whichever is hit first); the full output is then stored and referenced in details. Optionally provide a timeout in seconds.",
    parameters: BashArgs,
    retry: "never",
    execute: (args, ctx) => runBash(args.command, args.timeout, ctx, { ...opts, shell, maxBytes, maxLines }),
  });
}

async function runBash(
  command: string,
  timeoutSec: number | undefined,
  ctx: ToolContext,
  opts: BashToolOptions & { shell: string; maxBytes: number; maxLines: number },
): Promise<ToolOutput> {
  throwIfAborted(ctx.signal);
  const started = await ctx.sandbox.start([opts.shell, "-c", command], {
    workspace: ctx.workspace,
    ...(opts.env ? { env: opts.env } : {}),
  });
  if (!started.ok) throw new Error(`bash cannot run: ${started.error}`);
  const proc = started.process;
  const { child } = proc;
  const output = new OutputBuffer(opts.maxCaptureBytes ?? 64 * 1024 * 1024);
  const interval = opts.updateIntervalMs ?? 100;
  let lastUpdate = 0;
  let updateTimer: NodeJS.Timeout | undefined;
  const emitUpdate = () => {
    updateTimer = undefined;
    lastUpdate = Date.now();
    const tail = truncateTail(output.tail(opts.maxBytes * 2), { maxBytes: opts.maxBytes, maxLines: opts.maxLines });
    ctx.onUpdate({ content: [{ type: "text", text: tail.content }], details: { bytes: output.total } });
  };
  const onData = (chunk: Buffer) => {
    output.push(chunk);
    if (updateTimer) return;
    updateTimer = setTimeout(emitUpdate, Math.max(0, interval - (Date.now() - lastUpdate)));
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);

  let killing: Promise<void> | undefined;
  const killAll = () => {
    killing ??= proc.kill(opts.killGraceMs ?? 500);
    return killing;
  };
  let timedOut = false;
  const timer =
    timeoutSec !== undefined
      ? setTimeout(() => {
          timedOut = true;
          void killAll();
        }, timeoutSec * 1000)
      : undefined;
  const onAbort = () => void killAll();
  ctx.signal.addEventListener("abort", onAbort, { once: true });

  try {
    const exit = await waitForExit(child, () => {
      // The shell is done; anything it left running (background jobs) would hold the pipes open.
      if (proc.anyAlive()) void killAll();
    });
    if (killing) await killing;
    if (updateTimer) clearTimeout(updateTimer);
    const full = output.text();
    const tail = truncateTail(full, { maxBytes: opts.maxBytes, maxLines: opts.maxLines });
    const details: BashDetails = { exitCode: exit.code };
    if (exit.signal) details.signal = exit.signal;
    let text = tail.content;
    if (tail.truncated) {
      const ref = await ctx.blobs.put("bash-output.txt", full, { mimeType: "text/plain" });
      details.truncation = tail;
      details.fullOutput = ref;
      text += `\n\n${truncationNote(tail, ref, output.dropped)}`;
    }
    if (ctx.signal.aborted) throw new Error(appendStatus(text, "Command aborted"));
    if (timedOut) {
      details.timedOut = true;
      return {
        content: [{ type: "text", text: appendStatus(text, `Command timed out after ${timeoutSec} seconds`) }],
        details,
        isError: true,
      };
    }
    const stopped = proc.stopReason?.();
    if (stopped) {
      details.quotaExceeded = true;
      return { content: [{ type: "text", text: appendStatus(text, stopped) }], details, isError: true };
    }
    if (exit.code !== 0) {
      const status =
        exit.code === null
          ? `Command was killed by ${exit.signal ?? "a signal"}`
          : `Command exited with code ${exit.code}`;
      return { content: [{ type: "text", text: appendStatus(text, status) }], details, isError: true };
    }
    return { content: [{ type: "text", text: text || "(no output)" }], details };
  } finally {
    if (timer) clearTimeout(timer);
    if (updateTimer) clearTimeout(updateTimer);
    ctx.signal.removeEventListener("abort", onAbort);
    if (proc.anyAlive()) await killAll();
    await proc.release();
  }
}

const appendStatus = (text: string, status: string) => `${text ? `${text}\n\n` : ""}${status}`;

function truncationNote(t: Truncation, ref: BlobRef, dropped: number): string {
  const where = `Full output: blob ${ref.bucket}/${ref.name} (${formatSize(ref.size)})${dropped ? `, ${formatSize(dropped)} from its middle dropped` : ""}`;
  const start = t.totalLines - t.outputLines + 1;
  if (t.lastLinePartial) return `[Showing last ${formatSize(t.outputBytes)} of line ${t.totalLines}. ${where}]`;
  if (t.truncatedBy === "lines") return `[Showing lines ${start}-${t.totalLines} of ${t.totalLines}. ${where}]`;
  return `[Showing lines ${start}-${t.totalLines} of ${t.totalLines} (${formatSize(t.maxBytes)} limit). ${where}]`;
}

function waitForExit(
  child: ChildProcess,
  onShellExit: () => void,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      exited = { code, signal };
      onShellExit();
      // A process that left the group (setsid) may hold the pipes open: stop waiting for it.
      setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        resolve({ code, signal });
      }, 3_000).unref();
    });
    child.once("close", (code, signal) => resolve(exited ?? { code, signal }));
  });
}

/** Collects output; keeps the head and the tail when the total exceeds `cap` (the middle is dropped). */
class OutputBuffer {
  private head: Buffer[] = [];
  private headBytes = 0;
  private tailChunks: Buffer[] = [];
  private tailBytes = 0;
  total = 0;
  dropped = 0;

  private readonly cap: number;

  constructor(cap: number) {
    this.cap = cap;
  }

  push(chunk: Buffer): void {
    this.total += chunk.byteLength;
    if (this.headBytes < this.cap / 2) {
      this.head.push(chunk);
      this.headBytes += chunk.byteLength;
      return;
    }
    this.tailChunks.push(chunk);
    this.tailBytes += chunk.byteLength;
    while (this.tailBytes > this.cap / 2 && this.tailChunks.length > 1) {
      const first = this.tailChunks.shift();
      if (!first) break;
      this.tailBytes -= first.byteLength;
      this.dropped += first.byteLength;
    }
  }

  /** The last ~`bytes` of output (for progress snapshots). */
  tail(bytes: number): string {
    const parts: Buffer[] = [];
    let size = 0;
    const all = [...this.head, ...this.tailChunks];
    for (let i = all.length - 1; i >= 0 && size < bytes; i--) {
      const c = all[i];
      if (!c) continue;
      parts.unshift(c);
      size += c.byteLength;
    }
    const buf = Buffer.concat(parts);
    return buf.subarray(Math.max(0, buf.byteLength - bytes)).toString("utf-8");
  }

  text(): string {
    const head = Buffer.concat(this.head).toString("utf-8");
    if (this.tailChunks.length === 0) return head;
    const tail = Buffer.concat(this.tailChunks).toString("utf-8");
    return this.dropped ? `${head}\n[... ${this.dropped} bytes dropped ...]\n${tail}` : head + tail;
  }
}
