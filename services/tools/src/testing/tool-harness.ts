// Test helpers for tools: a temp workspace and a ToolContext without NATS.
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import type { AnyToolDefinition, ToolContext, ToolOutput } from "../define-tool.js";
import { toToolOutput } from "../define-tool.js";
import { createMemoryBlobSink, type MemoryBlobSink } from "../memory-blob-sink.js";
import { openSandbox } from "../sandbox/open-sandbox.js";
import { withWorkspaceQuota } from "../sandbox/quota-sandbox.js";
import type { SandboxSettings } from "../sandbox/sandbox-settings.js";
import { validateToolArgs } from "../validate-args.js";
import { createWorkspaceFiles } from "../workspace/workspace-files.js";
import { createWorkspaceQuota } from "../workspace/workspace-quota.js";

export interface Harness {
  /** The workspace root (real path). */
  root: string;
  /** A directory next to the workspace, outside it. */
  outside: string;
  blobs: MemoryBlobSink;
  updates: unknown[];
  controller: AbortController;
  ctx: ToolContext;
  /** Validates like the runner, then executes. Rejects with the tool's error (or the validation error). */
  run(tool: AnyToolDefinition, args: unknown): Promise<ToolOutput>;
  cleanup(): Promise<void>;
}

/**
 * `sandbox`: the settings the runner would probe (default: bubblewrap with the default limits).
 * `quotaBytes`: the workspace quota, applied as the runner applies it (file tools and processes).
 */
export async function createHarness(opts: { sandbox?: SandboxSettings; quotaBytes?: number } = {}): Promise<Harness> {
  const base = await realpath(await mkdtemp(join(tmpdir(), "fleet-tools-test-")));
  const root = join(base, "ws");
  const outside = join(base, "outside");
  const { mkdir } = await import("node:fs/promises");
  await mkdir(root);
  await mkdir(outside);
  const blobs = createMemoryBlobSink("fleet_blobs");
  const updates: unknown[] = [];
  const controller = new AbortController();
  const quota = opts.quotaBytes ? createWorkspaceQuota(root, opts.quotaBytes) : undefined;
  const sandbox = await openSandbox(opts.sandbox);
  const ctx: ToolContext = {
    signal: controller.signal,
    onUpdate: (p) => updates.push(p),
    workspace: root,
    files: createWorkspaceFiles(root, quota),
    logger: pino({ level: "silent" }),
    sessionId: "s-1",
    toolCallId: "tc-1",
    blobs,
    sandbox: quota ? withWorkspaceQuota(sandbox, quota) : sandbox,
  };
  return {
    root,
    outside,
    blobs,
    updates,
    controller,
    ctx,
    async run(tool, args) {
      const valid = validateToolArgs(tool, args);
      if (!valid.ok) throw new Error(valid.error);
      return toToolOutput(await tool.execute(valid.value, ctx));
    },
    cleanup: () => rm(base, { recursive: true, force: true }),
  };
}

/** The text of a result's text blocks, joined by newlines. */
export const textOf = (out: ToolOutput) =>
  out.content
    .filter((b) => b.type === "text")
    .map((b) => (b as { text: string }).text)
    .join("\n");
