import {
  ensureError,
  payloadBytes,
  sizeLimitViolation,
  type ToolFinalRecord,
  toolArgsSizeLimit,
  toolErrorText,
} from "@fleet/protocol";
import type { Logger } from "pino";
import { type AnyToolDefinition, type BlobSink, toToolOutput } from "../define-tool.js";
import type { ProcessSandbox } from "../sandbox/process-sandbox.js";
import { withWorkspaceQuota } from "../sandbox/quota-sandbox.js";
import { validateToolArgs } from "../validate-args.js";
import { createWorkspaceFiles } from "../workspace/workspace-files.js";
import type { WorkspaceQuota } from "../workspace/workspace-quota.js";

/** Why a running call was aborted. `shutdown` = the runner is stopping. */
export type AbortCause = "cancel" | "deadline" | "shutdown";

export interface ExecuteCallInput {
  tool: AnyToolDefinition;
  args: unknown;
  sessionId: string;
  toolCallId: string;
  workspace: string;
  /** The workspace's size quota (FLEET_WORKSPACE_QUOTA_MB), applied to the file tools and every process. */
  quota?: WorkspaceQuota;
  logger: Logger;
  blobs: BlobSink;
  sandbox: ProcessSandbox;
  /** Epoch ms after which the call is aborted with the deadline error. */
  deadlineAt: number;
  /** The budget named in the deadline error text. */
  deadlineMs: number;
  now: () => number;
  /** Aborted by the runner with an `AbortCause` as reason (cancel, shutdown). */
  signal: AbortSignal;
  onUpdate: (partial: unknown) => void;
  /** The call's trace context, handed to the tool (`ToolContext.traceContext`). */
  traceContext?: Readonly<Record<string, string>>;
  /** After an abort, how long the tool may take to settle before the abort result is given anyway. */
  abortGraceMs: number;
  /** FLEET_MAX_TOOL_ARGS_BYTES: larger `args` (as JSON) are refused with an error result. Default 512 KiB. */
  maxArgsBytes?: number;
}

export type CallOutcome =
  | { kind: "done"; record: ToolFinalRecord; validationFailed?: boolean }
  | { kind: "aborted"; cause: AbortCause; record: ToolFinalRecord };

const errorRecord = (text: string): ToolFinalRecord => ({
  kind: "result",
  content: [{ type: "text", text }],
  details: {},
  isError: true,
});

/**
 * Checks the size of the arguments, validates and executes one call. Contract: never rejects. A thrown error becomes an error result
 * with the message verbatim (pi); an abort gives `Operation aborted` (cancel, shutdown) or the
 * deadline error, once the tool settled or `abortGraceMs` passed, whatever the tool returns.
 */
export async function executeCall(input: ExecuteCallInput): Promise<CallOutcome> {
  const oversize = sizeLimitViolation(
    "its arguments JSON",
    payloadBytes(JSON.stringify(input.args) ?? ""),
    toolArgsSizeLimit(input.maxArgsBytes),
  );
  if (oversize) {
    return {
      kind: "done",
      record: errorRecord(`Tool ${input.tool.name} was not run: ${oversize}`),
      validationFailed: true,
    };
  }
  const valid = validateToolArgs(input.tool, input.args);
  if (!valid.ok) return { kind: "done", record: errorRecord(valid.error), validationFailed: true };
  if (input.deadlineAt <= input.now()) {
    // Waited in the queue past its deadline: not started at all.
    return {
      kind: "aborted",
      cause: "deadline",
      record: errorRecord(toolErrorText.deadline(input.tool.name, input.deadlineMs)),
    };
  }

  const controller = new AbortController();
  let cause: AbortCause | undefined;
  let wakeAbort!: () => void;
  const aborted = new Promise<void>((resolve) => {
    wakeAbort = resolve;
  });
  const abort = (why: AbortCause) => {
    if (cause) return;
    cause = why;
    controller.abort(why);
    wakeAbort();
  };
  const onExternal = () => abort(input.signal.reason === "shutdown" ? "shutdown" : "cancel");
  if (input.signal.aborted) onExternal();
  else input.signal.addEventListener("abort", onExternal, { once: true });
  const MAX_TIMER_MS = 2_147_483_647;
  const armDeadline = (at: number) =>
    setTimeout(() => abort("deadline"), Math.min(MAX_TIMER_MS, Math.max(0, at - input.now())));
  let deadlineTimer = armDeadline(input.deadlineAt);
  const extendDeadline = () => {
    if (cause) return;
    clearTimeout(deadlineTimer);
    deadlineTimer = armDeadline(input.now() + input.deadlineMs);
  };

  const run = (async (): Promise<ToolFinalRecord> => {
    try {
      if (cause) throw new Error(toolErrorText.aborted);
      const output = toToolOutput(
        await input.tool.execute(valid.value, {
          signal: controller.signal,
          onUpdate: (partial) => {
            if (!cause) input.onUpdate(partial);
          },
          extendDeadline,
          ...(input.traceContext ? { traceContext: input.traceContext } : {}),
          workspace: input.workspace,
          files: createWorkspaceFiles(input.workspace, input.quota),
          logger: input.logger,
          sessionId: input.sessionId,
          toolCallId: input.toolCallId,
          blobs: input.blobs,
          sandbox: input.quota ? withWorkspaceQuota(input.sandbox, input.quota) : input.sandbox,
        }),
      );
      const record: ToolFinalRecord = {
        kind: "result",
        content: output.content,
        isError: output.isError ?? false,
      };
      if (output.details !== undefined) record.details = output.details;
      if (output.terminate !== undefined) record.terminate = output.terminate;
      return record;
    } catch (err) {
      return errorRecord(ensureError(err).message);
    }
  })();

  try {
    const first = await Promise.race([run, aborted.then(() => null)]);
    if (first && !cause) return { kind: "done", record: first };
    // Aborted: give the tool a bounded time to clean up (bash kills its process group).
    let graceTimer: NodeJS.Timeout | undefined;
    await Promise.race([
      run,
      new Promise<void>((resolve) => {
        graceTimer = setTimeout(resolve, input.abortGraceMs);
      }),
    ]);
    if (graceTimer) clearTimeout(graceTimer);
    const why = cause ?? "cancel";
    const text = why === "deadline" ? toolErrorText.deadline(input.tool.name, input.deadlineMs) : toolErrorText.aborted;
    return { kind: "aborted", cause: why, record: errorRecord(text) };
  } finally {
    clearTimeout(deadlineTimer);
    input.signal.removeEventListener("abort", onExternal);
  }
}
