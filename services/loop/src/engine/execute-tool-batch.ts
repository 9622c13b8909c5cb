// The tool calls of one assistant message: preflight, execution, results (pi 0.73 semantics plus
// Fleet's abort and length-stop rules).
import { type AssistantMessage, type ToolCallContent, type ToolResultMessage, toolErrorText } from "@fleet/protocol";
import {
  batchMessages,
  stepToolResult,
  type ToolResultInput,
  type ToolResultStep,
} from "../session-core/tool-result.js";
import { errorToolResult, thrownText } from "./messages.js";
import { ABORTED, isPromise, noop, RESOLVED, type RunScope } from "./run-scope.js";
import type { LoopConfig, LoopContext, ToolDefinition, ToolExecutionOutcome, ToolOutput } from "./types.js";
import { validateToolArguments } from "./validate-tool-arguments.js";

/** What is already known about a call when a resumed run re-enters a batch. */
export interface PriorToolCall {
  /**
   * Its `tool_execution_start` is in the log: it gets no second one. Its preflight runs again (the
   * lookup, validation and `beforeToolCall` hooks, which find a logged approval decision), then it is
   * awaited: the tool port finds a stored result, or dispatches it again under the same call id.
   */
  started?: boolean;
  /** Its `tool_execution_end` outcome: the call is not run again and gets no execution events. */
  outcome?: ToolExecutionOutcome;
  /** Its toolResult message, already ended: nothing is emitted for the call. */
  message?: ToolResultMessage;
}

export interface ToolBatchResult {
  /** One toolResult message per call, in assistant source order. */
  messages: ToolResultMessage[];
  /** pi: true when every result of the batch has `terminate: true`. */
  terminate: boolean;
}

interface Slot {
  call: ToolCallContent;
  outcome: ToolExecutionOutcome | undefined;
  message: ToolResultMessage | undefined;
  started: boolean;
  prepared: { tool: ToolDefinition; args: unknown } | undefined;
  /** False once the call settled or was abandoned: later `onUpdate` calls are dropped. */
  accepting: boolean;
  /** Set when an abort abandoned the running call: its late result is ignored, afterToolCall skipped. */
  dropped: boolean;
}

const abortedOutcome = (): ToolExecutionOutcome => ({ result: errorToolResult(toolErrorText.aborted), isError: true });

/**
 * Runs the batch and emits its events:
 * - preflight, one call after the other: `tool_execution_start`, lookup (`Tool <name> not found`),
 *   validation, `beforeToolCall` (`Tool execution was blocked` or its reason); a call that fails
 *   preflight gets its `tool_execution_end` at once;
 * - parallel (default): prepared calls run concurrently; `tool_execution_end` in completion order;
 *   toolResult messages in source order once every call settled;
 * - sequential (config, or any call to a tool with `executionMode: "sequential"`): start, end and
 *   toolResult message per call, in source order;
 * - `stopReason: "length"`: no call runs; each gets start, end and an error result naming the
 *   output-token limit (pi 0.83), in source order;
 * - abort (Fleet): calls that finished keep their results; every unfinished or unstarted call ends
 *   at once with `Operation aborted` (its late result and updates are dropped), then the
 *   toolResult messages follow as usual.
 */
export async function executeToolBatch(
  context: LoopContext,
  assistant: AssistantMessage,
  config: LoopConfig,
  run: RunScope,
  prior: ReadonlyMap<string, PriorToolCall> = new Map(),
): Promise<ToolBatchResult> {
  const slots: Slot[] = [];
  for (const block of assistant.content) {
    if (block.type !== "toolCall") continue;
    const known = prior.get(block.id);
    slots.push({
      call: block,
      outcome: known?.outcome ?? (known?.message ? outcomeOf(known.message) : undefined),
      message: known?.message,
      started: known?.started === true,
      prepared: undefined,
      accepting: true,
      dropped: false,
    });
  }
  if (assistant.stopReason === "length") {
    const failed = (): ToolExecutionOutcome => ({
      result: errorToolResult(toolErrorText.lengthStop(config.maxTokens)),
      isError: true,
    });
    await runSequential(slots, run, async (slot) => {
      await emitStart(slot, run);
      return failed();
    });
  } else {
    if (config.toolExecution === "sequential" || anySequential(slots, context))
      await runSequential(slots, run, (slot) => runOneSequential(slot, context, assistant, config, run));
    else await runParallel(slots, context, assistant, config, run);
  }
  return {
    messages: slots.map((s) => s.message as ToolResultMessage),
    terminate: slots.length > 0 && slots.every((s) => s.outcome?.result.terminate === true),
  };
}

/** True when a call goes to a tool with `executionMode: "sequential"`. */
function anySequential(slots: readonly Slot[], context: LoopContext): boolean {
  for (const slot of slots) if (findTool(context, slot.call.name)?.executionMode === "sequential") return true;
  return false;
}

function findTool(context: LoopContext, name: string): ToolDefinition | undefined {
  for (const tool of context.tools) if (tool.name === name) return tool;
  return undefined;
}

const outcomeOf = (message: ToolResultMessage): ToolExecutionOutcome => ({
  result: { content: message.content, ...(message.details !== undefined ? { details: message.details } : {}) },
  isError: message.isError,
});

async function runSequential(
  slots: Slot[],
  run: RunScope,
  decide: (slot: Slot) => Promise<ToolExecutionOutcome>,
): Promise<void> {
  for (let i = 0; i < slots.length; i++) {
    const slot = slots[i] as Slot;
    if (slot.message) continue;
    if (slot.outcome) {
      // Ended before an interruption: only its toolResult message is missing.
      await emitStep(slots, batchMessages(slots, run.ports.now()), run);
      continue;
    }
    let outcome: ToolExecutionOutcome;
    if (run.signal?.aborted) {
      await emitStart(slot, run);
      outcome = abortedOutcome();
    } else {
      outcome = await decide(slot);
    }
    await settle(slots, i, outcome, "sequential", run);
  }
}

async function runOneSequential(
  slot: Slot,
  context: LoopContext,
  assistant: AssistantMessage,
  config: LoopConfig,
  run: RunScope,
): Promise<ToolExecutionOutcome> {
  await emitStart(slot, run);
  const preflight = prepare(slot, context, assistant, config, run);
  const immediate = isPromise(preflight) ? await preflight : preflight;
  if (immediate) return immediate;
  if (!run.signal) return executeAndFinalize(slot, context, assistant, config, run);
  const abort = run.abort.promise();
  try {
    const outcome = await Promise.race([executeAndFinalize(slot, context, assistant, config, run), abort.promise]);
    if (outcome !== ABORTED) return outcome;
    slot.accepting = false;
    slot.dropped = true;
    return abortedOutcome();
  } finally {
    abort.dispose();
  }
}

async function runParallel(
  slots: Slot[],
  context: LoopContext,
  assistant: AssistantMessage,
  config: LoopConfig,
  run: RunScope,
): Promise<void> {
  for (let i = 0; i < slots.length; i++) {
    const slot = slots[i] as Slot;
    if (slot.outcome || run.signal?.aborted) continue;
    await emitStart(slot, run);
    const preflight = prepare(slot, context, assistant, config, run);
    const immediate = isPromise(preflight) ? await preflight : preflight;
    if (immediate) await settle(slots, i, immediate, "parallel", run);
  }

  const batch: ParallelBatch = { aborted: false, failure: undefined, failed: false, settling: [] };
  const running: Promise<void>[] = [];
  if (!run.signal?.aborted) {
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as Slot;
      if (slot.prepared && !slot.outcome) running.push(runSlot(slots, i, batch, context, assistant, config, run));
    }
  }
  let abortedWait = false;
  if (running.length > 0) {
    if (run.signal) {
      const abort = run.abort.promise();
      try {
        abortedWait = (await Promise.race([Promise.all(running), abort.promise])) === ABORTED;
      } finally {
        abort.dispose();
      }
    } else {
      await Promise.all(running);
    }
  }
  const unfinished = slots.some((s) => !s.outcome);
  if (unfinished) batch.aborted = true;
  // An abort ended the wait: a call settling from here on is dropped (above); one already settling
  // is waited for, so its events are all out before the batch emits anything more.
  if (abortedWait) await Promise.allSettled(batch.settling);
  if (batch.failed) throw batch.failure;

  if (unfinished) {
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as Slot;
      if (slot.outcome) continue;
      slot.accepting = false;
      slot.dropped = true;
      await emitStart(slot, run);
      await settle(slots, i, abortedOutcome(), "parallel", run);
    }
  }
  // A resumed batch whose calls all ended before the interruption still owes their messages.
  for (const slot of slots) {
    if (slot.message) continue;
    await emitStep(slots, batchMessages(slots, run.ports.now()), run);
    break;
  }
}

/** What the concurrently running calls of a parallel batch share. */
interface ParallelBatch {
  /** Set once an abort ended the batch: a late outcome is dropped. */
  aborted: boolean;
  /** The first failure (an emit that threw), rethrown once every call settled. */
  failure: unknown;
  failed: boolean;
  /** The settles of calls that finished (their failures are recorded above by `runSlot`). */
  settling: Promise<void>[];
}

/** One prepared call of a parallel batch: executes, then settles (`settle`). */
async function runSlot(
  slots: Slot[],
  index: number,
  batch: ParallelBatch,
  context: LoopContext,
  assistant: AssistantMessage,
  config: LoopConfig,
  run: RunScope,
): Promise<void> {
  const slot = slots[index] as Slot;
  try {
    const outcome = await executeAndFinalize(slot, context, assistant, config, run);
    if (batch.aborted) return;
    const settled = settle(slots, index, outcome, "parallel", run);
    batch.settling.push(settled);
    await settled;
  } catch (error) {
    if (!batch.failed) {
      batch.failed = true;
      batch.failure = error;
    }
  }
}

/**
 * Preflight: lookup, validation, beforeToolCall. Returns an outcome when the call must not run.
 * Synchronous unless a beforeToolCall hook has to be awaited.
 */
function prepare(
  slot: Slot,
  context: LoopContext,
  assistant: AssistantMessage,
  config: LoopConfig,
  run: RunScope,
): ToolExecutionOutcome | undefined | Promise<ToolExecutionOutcome | undefined> {
  const { call } = slot;
  const tool = findTool(context, call.name);
  if (!tool) return { result: errorToolResult(toolErrorText.notFound(call.name)), isError: true };
  const validated = validateToolArguments(tool, call.arguments);
  if (!validated.ok) return { result: errorToolResult(validated.error), isError: true };
  if (config.beforeToolCall) return askBeforeToolCall(slot, tool, validated.args, context, assistant, config, run);
  if (run.signal?.aborted) return abortedOutcome();
  slot.prepared = { tool, args: validated.args };
  return undefined;
}

async function askBeforeToolCall(
  slot: Slot,
  tool: ToolDefinition,
  args: unknown,
  context: LoopContext,
  assistant: AssistantMessage,
  config: LoopConfig,
  run: RunScope,
): Promise<ToolExecutionOutcome | undefined> {
  try {
    const verdict = await config.beforeToolCall?.(
      { assistantMessage: assistant, toolCall: slot.call, args, context },
      run.signal,
    );
    if (run.signal?.aborted) return abortedOutcome();
    if (verdict?.block) return { result: errorToolResult(verdict.reason || toolErrorText.blocked), isError: true };
    if (verdict?.args !== undefined) {
      const edited = validateToolArguments(tool, verdict.args);
      if (!edited.ok) return { result: errorToolResult(edited.error), isError: true };
      slot.prepared = { tool, args: edited.args };
      return undefined;
    }
  } catch (error) {
    return { result: errorToolResult(thrownText(error)), isError: true };
  }
  if (run.signal?.aborted) return abortedOutcome();
  slot.prepared = { tool, args };
  return undefined;
}

async function executeAndFinalize(
  slot: Slot,
  context: LoopContext,
  assistant: AssistantMessage,
  config: LoopConfig,
  run: RunScope,
): Promise<ToolExecutionOutcome> {
  const { call } = slot;
  const args = slot.prepared?.args;
  const updates: Promise<void>[] = [];
  let executed: ToolExecutionOutcome;
  try {
    const output = await run.ports.executeTool(
      { toolCallId: call.id, toolName: call.name, args },
      run.signal,
      (partialResult) => {
        if (!slot.accepting) return;
        updates.push(
          run.sink
            .emit({
              type: "tool_execution_update",
              toolCallId: call.id,
              toolName: call.name,
              args: call.arguments,
              partialResult,
            })
            .catch(noop),
        );
      },
    );
    slot.accepting = false;
    executed = normalizeOutput(output);
  } catch (error) {
    slot.accepting = false;
    executed = { result: errorToolResult(thrownText(error)), isError: true };
  }
  if (updates.length > 0) await Promise.all(updates);
  const failed = run.sink.failed();
  if (failed) throw failed;
  if (!config.afterToolCall || slot.dropped) return executed;
  try {
    const patch = await config.afterToolCall(
      {
        assistantMessage: assistant,
        toolCall: call,
        args,
        result: executed.result,
        isError: executed.isError,
        context,
      },
      run.signal,
    );
    if (!patch) return executed;
    const content = patch.content ?? executed.result.content;
    const details = patch.details ?? executed.result.details;
    const terminate = patch.terminate ?? executed.result.terminate;
    return {
      result: {
        content,
        ...(details !== undefined ? { details } : {}),
        ...(terminate !== undefined ? { terminate } : {}),
      },
      isError: patch.isError ?? executed.isError,
    };
  } catch (error) {
    return { result: errorToolResult(thrownText(error)), isError: true };
  }
}

function normalizeOutput(output: ToolOutput): ToolExecutionOutcome {
  const result: ToolExecutionOutcome["result"] = { content: Array.isArray(output?.content) ? output.content : [] };
  if (output?.details !== undefined) result.details = output.details;
  if (output?.terminate !== undefined) result.terminate = output.terminate;
  return { result, isError: output?.isError === true };
}

function emitStart(slot: Slot, run: RunScope): Promise<void> {
  if (slot.started) return RESOLVED;
  slot.started = true;
  const { call } = slot;
  return run.sink.emit({
    type: "tool_execution_start",
    toolCallId: call.id,
    toolName: call.name,
    args: call.arguments,
  });
}

/**
 * A call's outcome in its batch. The engine's own step (`stepToolResult` on the slots) is taken as
 * the result arrives, and the outcome is the slot's before anything is emitted, so a call settling
 * meanwhile sees it. With a `decideToolResult` port (a session engine), the session's fold decides
 * instead, in the delivery order (`emitDecided`); what it decided is what is emitted.
 */
function settle(
  slots: Slot[],
  index: number,
  outcome: ToolExecutionOutcome,
  mode: "parallel" | "sequential",
  run: RunScope,
): Promise<void> {
  const step = stepToolResult(slots, index, outcome, mode, run.ports.now());
  const slot = slots[index] as Slot;
  slot.outcome = outcome;
  const decide = run.ports.decideToolResult;
  const emitDecided = run.sink.emitDecided;
  if (!decide || !emitDecided) return emitStep(slots, step, run);
  const input: ToolResultInput = { kind: "tool_result", toolCallId: slot.call.id, outcome, mode };
  return emitDecided
    .call(run.sink, () => decide(input) ?? step.events.map((body) => ({ id: run.ports.newId(), body })))
    .then((drafts) => {
      for (const { body } of drafts) {
        if (body.type !== "message_end" || body.message.role !== "toolResult") continue;
        const message = body.message;
        for (const s of slots) if (s.call.id === message.toolCallId) s.message = message;
      }
    });
}

/**
 * Emits a step's events one after the other, its messages recorded on their slots first; no
 * promise while the sink accepts each at once. A batch waits for every settle it started before it
 * goes on, so nothing the batch emits later comes between them.
 */
function emitStep(slots: Slot[], step: ToolResultStep, run: RunScope): Promise<void> {
  for (const { toolCallId, message } of step.messages) {
    for (const slot of slots) if (slot.call.id === toolCallId) slot.message = message;
  }
  return emitFrom(step.events, 0, run);
}

function emitFrom(events: ToolResultStep["events"], from: number, run: RunScope): Promise<void> {
  for (let i = from; i < events.length; i++) {
    const sent = run.sink.emit(events[i] as ToolResultStep["events"][number]);
    if (sent === RESOLVED) continue;
    return i + 1 < events.length ? sent.then(() => emitFrom(events, i + 1, run)) : sent;
  }
  return RESOLVED;
}
