// A session's log as AG-UI events (pure): one fold over the Fleet events, each step answering the
// AG-UI events that event yields, each tagged with the AG-UI run it belongs to.
import { type AGUIEvent, EventType, type Interrupt, type JsonPatchOperation, type TokenUsage } from "@ag-ui/core";
import {
  AGENT_EVENT_TYPES,
  type AgentMessage,
  emptySpend,
  type FleetEvent,
  type SessionBudget,
  type Spend,
  type StreamDelta,
  spendOfEvent,
  type Usage,
} from "@fleet/protocol";

/**
 * Command ids the AG-UI route gives the commands it sends: `agui.<k>.<runId>`. The first (`k` = 0)
 * of a request opens the AG-UI run `<runId>` when its outcome is logged.
 */
export const AGUI_COMMAND_PREFIX = "agui.";
export const aguiCommandId = (runId: string, k = 0): string => `${AGUI_COMMAND_PREFIX}${k}.${runId}`;
const OPENING_PREFIX = aguiCommandId("");

/** One AG-UI event and the AG-UI run it belongs to. */
export interface AguiFrame {
  run: string;
  event: AGUIEvent;
  /** RUN_FINISHED or RUN_ERROR: the run's last frame. */
  terminal: boolean;
}

/** The AG-UI `state` of a thread: its queued messages (their text) and what its LLM calls spent. */
export interface AguiState {
  queues: { steer: string[]; followUp: string[]; nextTurn: string[] };
  spend: { session: Spend; run: Spend; budget: SessionBudget };
}

/** The interrupt reason of a tool call waiting for a person's decision. */
export const TOOL_APPROVAL_REASON = "tool_approval";
/** What a resume entry answering a tool approval carries as `payload`. */
export const APPROVAL_RESPONSE_SCHEMA = {
  type: "object",
  properties: { approved: { type: "boolean" }, reason: { type: "string" } },
  required: ["approved"],
  additionalProperties: false,
} as const;

type BlockKind = "text" | "thinking" | "toolCall";
interface OpenBlock {
  kind: BlockKind;
  /** The AG-UI id: the message id (text), the reasoning message id (thinking) or the tool call id. */
  id: string;
  /** Tool calls: whether any argument delta was sent. */
  argsSent: boolean;
}

interface OpenRun {
  id: string;
  /** User messages of the opening command, which the AG-UI client sent itself: not streamed back. */
  skipUserMessages: number;
  /** Usage of the run's LLM calls, per provider and model, in order of first use. */
  usage: TokenUsage[];
  /** The state as last sent in this run (STATE_DELTA is the difference from it). */
  sent: AguiState;
  /** Stop reason and error of the run's last assistant message. */
  lastStop?: { reason: string; errorMessage?: string; errorReason?: string };
}

export interface AguiProjection {
  threadId: string;
  open: OpenRun | null;
  /** The assistant message streaming now: its AG-UI message id and its open content blocks. */
  message: { id: string; blocks: ReadonlyMap<number, OpenBlock> } | null;
  state: AguiState;
}

export const initialAguiProjection = (threadId: string): AguiProjection => ({
  threadId,
  open: null,
  message: null,
  state: {
    queues: { steer: [], followUp: [], nextTurn: [] },
    spend: { session: emptySpend(), run: emptySpend(), budget: {} },
  },
});

/** Events that belong to a run's progress: outside an AG-UI run, each opens one. */
const RUN_EVENTS: ReadonlySet<FleetEvent["type"]> = new Set<FleetEvent["type"]>([
  ...AGENT_EVENT_TYPES,
  "tool_approval_requested",
  "tool_approval_resolved",
]);

/**
 * Applies one event: the next projection and the AG-UI events the event yields, in order.
 * Contract: deterministic (ids and timestamps come from the events), never throws, and the frames of
 * each run, read alone, pass the AG-UI client's `verifyEvents` from RUN_STARTED to its end.
 */
export function stepAgui(p: AguiProjection, event: FleetEvent): { projection: AguiProjection; frames: AguiFrame[] } {
  const state = nextState(p.state, event);
  const ts = event.meta.ts;
  const frames: AguiFrame[] = [];
  const emit = (run: string, e: Record<string, unknown>, terminal = false) =>
    frames.push({ run, event: { ...e, timestamp: ts } as unknown as AGUIEvent, terminal });
  let open = p.open;
  let message = p.message;

  if ((event.type === "command_accepted" || event.type === "command_rejected") && isOpening(event.commandId)) {
    const runId = event.commandId.slice(OPENING_PREFIX.length);
    emit(runId, { type: EventType.RUN_STARTED, threadId: p.threadId, runId });
    if (event.type === "command_rejected") {
      emit(runId, { type: EventType.RUN_ERROR, message: event.reason, code: event.code }, true);
    } else if (open) {
      // Another run is open: the command's effects stream in that one.
      emit(runId, { type: EventType.RUN_FINISHED, threadId: p.threadId, runId }, true);
    } else {
      open = { id: runId, skipUserMessages: event.messages?.length ?? 0, usage: [], sent: state };
      emit(runId, { type: EventType.STATE_SNAPSHOT, snapshot: state });
    }
    return { projection: { ...p, open, message, state }, frames };
  }
  if (!open) {
    if (!RUN_EVENTS.has(event.type)) return { projection: { ...p, state }, frames };
    const runId = event.type === "agent_start" ? (event.meta.runId ?? event.meta.id) : event.meta.id;
    open = { id: runId, skipUserMessages: 0, usage: [], sent: state };
    emit(runId, { type: EventType.RUN_STARTED, threadId: p.threadId, runId });
    emit(runId, { type: EventType.STATE_SNAPSHOT, snapshot: state });
  }
  const run = open.id;
  const send = (e: Record<string, unknown>) => emit(run, e);

  switch (event.type) {
    case "message_start":
      if (event.message.role === "assistant") message = { id: event.meta.id, blocks: new Map() };
      break;
    case "message_update":
      if (message) message = { ...message, blocks: applyDeltas(message.id, message.blocks, event.deltas, send) };
      break;
    case "message_end": {
      const m = event.message;
      if (m.role === "assistant") {
        if (message) closeBlocks(message.blocks, m, send);
        message = null;
        open = {
          ...open,
          usage: addUsage(open.usage, m.provider, m.model, m.usage),
          lastStop: {
            reason: m.stopReason,
            ...(m.errorMessage !== undefined ? { errorMessage: m.errorMessage } : {}),
            ...(typeof m.errorReason === "string" ? { errorReason: m.errorReason } : {}),
          },
        };
      } else if (m.role === "user") {
        if (open.skipUserMessages > 0) open = { ...open, skipUserMessages: open.skipUserMessages - 1 };
        else {
          send({ type: EventType.TEXT_MESSAGE_START, messageId: event.meta.id, role: "user" });
          const text = textOf(m);
          if (text !== "") send({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: event.meta.id, delta: text });
          send({ type: EventType.TEXT_MESSAGE_END, messageId: event.meta.id });
        }
      } else if (m.role === "toolResult") {
        send({
          type: EventType.TOOL_CALL_RESULT,
          messageId: event.meta.id,
          toolCallId: m.toolCallId,
          content: toolResultContent(m.content),
          role: "tool",
        });
      }
      break;
    }
    case "tool_approval_requested": {
      const interrupt: Interrupt = {
        id: event.toolCallId,
        reason: TOOL_APPROVAL_REASON,
        message: `Approve the call to ${event.toolName}?`,
        toolCallId: event.toolCallId,
        responseSchema: { ...APPROVAL_RESPONSE_SCHEMA },
        metadata: { toolName: event.toolName, args: event.args },
      };
      emit(run, finished(p.threadId, open, { type: "interrupt", interrupts: [interrupt] }), true);
      return { projection: { ...p, open: null, message, state }, frames };
    }
    case "agent_end": {
      const stop = open.lastStop;
      if (stop?.reason === "error") {
        emit(
          run,
          {
            type: EventType.RUN_ERROR,
            message: stop.errorMessage ?? "the run failed",
            code: stop.errorReason ?? "error",
            ...(open.usage.length > 0 ? { usage: open.usage } : {}),
          },
          true,
        );
      } else {
        const outcome = stop?.reason === "aborted" ? { type: "cancelled" } : { type: "success" };
        emit(run, finished(p.threadId, open, outcome), true);
      }
      return { projection: { ...p, open: null, message: null, state }, frames };
    }
    default:
      break;
  }
  const delta = stateDelta(open.sent, state);
  if (delta.length > 0) {
    send({ type: EventType.STATE_DELTA, delta });
    open = { ...open, sent: state };
  }
  return { projection: { ...p, open, message, state }, frames };
}

const isOpening = (commandId: string) =>
  commandId.startsWith(OPENING_PREFIX) && commandId.length > OPENING_PREFIX.length;

function finished(threadId: string, open: OpenRun, outcome: Record<string, unknown>): Record<string, unknown> {
  return {
    type: EventType.RUN_FINISHED,
    threadId,
    runId: open.id,
    outcome,
    ...(open.usage.length > 0 ? { usage: open.usage } : {}),
  };
}

/** The streaming deltas of one assistant message as AG-UI events; answers the blocks left open. */
function applyDeltas(
  messageId: string,
  blocks: ReadonlyMap<number, OpenBlock>,
  deltas: readonly StreamDelta[],
  send: (e: Record<string, unknown>) => void,
): ReadonlyMap<number, OpenBlock> {
  const next = new Map(blocks);
  for (const d of deltas) {
    const block = next.get(d.contentIndex);
    switch (d.type) {
      case "text_start":
        next.set(d.contentIndex, { kind: "text", id: messageId, argsSent: false });
        send({ type: EventType.TEXT_MESSAGE_START, messageId, role: "assistant" });
        break;
      case "text_delta":
        if (block?.kind === "text" && d.delta !== "")
          send({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: d.delta });
        break;
      case "thinking_start": {
        const id = reasoningId(messageId, d.contentIndex);
        next.set(d.contentIndex, { kind: "thinking", id, argsSent: false });
        send({ type: EventType.REASONING_START, messageId: id });
        send({ type: EventType.REASONING_MESSAGE_START, messageId: id, role: "reasoning" });
        break;
      }
      case "thinking_delta":
        if (block?.kind === "thinking" && d.delta !== "")
          send({ type: EventType.REASONING_MESSAGE_CONTENT, messageId: block.id, delta: d.delta });
        break;
      case "toolcall_start":
        next.set(d.contentIndex, { kind: "toolCall", id: d.id, argsSent: false });
        send({ type: EventType.TOOL_CALL_START, toolCallId: d.id, toolCallName: d.name, parentMessageId: messageId });
        break;
      case "toolcall_delta":
        if (block?.kind === "toolCall" && d.delta !== "") {
          send({ type: EventType.TOOL_CALL_ARGS, toolCallId: block.id, delta: d.delta });
          next.set(d.contentIndex, { ...block, argsSent: true });
        }
        break;
      case "text_end":
      case "thinking_end":
      case "toolcall_end":
        if (block) {
          const signature = d.type === "thinking_end" ? d.thinkingSignature : undefined;
          const args = d.type === "toolcall_end" ? d.toolCall.arguments : undefined;
          endBlock(block, send, { signature, args });
          next.delete(d.contentIndex);
        }
        break;
    }
  }
  return next;
}

/** Ends every block a message left open (an abort, an error), with what its final content holds. */
function closeBlocks(
  blocks: ReadonlyMap<number, OpenBlock>,
  message: Extract<AgentMessage, { role: "assistant" }>,
  send: (e: Record<string, unknown>) => void,
): void {
  for (const [index, block] of [...blocks].sort(([a], [b]) => a - b)) {
    const content = message.content[index];
    endBlock(block, send, {
      signature: content?.type === "thinking" ? content.thinkingSignature : undefined,
      args: content?.type === "toolCall" ? content.arguments : undefined,
    });
  }
}

function endBlock(
  block: OpenBlock,
  send: (e: Record<string, unknown>) => void,
  final: { signature: string | undefined; args: unknown },
): void {
  switch (block.kind) {
    case "text":
      send({ type: EventType.TEXT_MESSAGE_END, messageId: block.id });
      return;
    case "thinking":
      send({ type: EventType.REASONING_MESSAGE_END, messageId: block.id });
      if (final.signature) {
        send({
          type: EventType.REASONING_ENCRYPTED_VALUE,
          subtype: "message",
          entityId: block.id,
          encryptedValue: final.signature,
        });
      }
      send({ type: EventType.REASONING_END, messageId: block.id });
      return;
    case "toolCall":
      if (!block.argsSent)
        send({ type: EventType.TOOL_CALL_ARGS, toolCallId: block.id, delta: JSON.stringify(final.args ?? {}) });
      send({ type: EventType.TOOL_CALL_END, toolCallId: block.id });
      return;
  }
}

/** The AG-UI id of the reasoning message of an assistant message's thinking block. */
export const reasoningId = (messageId: string, contentIndex: number): string => `${messageId}.thinking.${contentIndex}`;

/** A user message's text: its text blocks, one per line. */
function textOf(message: { content: string | ReadonlyArray<{ type: string; text?: string }> }): string {
  if (typeof message.content === "string") return message.content;
  return message.content
    .filter((b) => b.type === "text")
    .map((b) => b.text ?? "")
    .join("\n");
}

type ResultBlock = { type: "text"; text: string } | { type: "image"; data: string; mimeType: string };

/** A tool result as AG-UI content: its text (blocks one per line), or parts when it has images. */
export function toolResultContent(content: ReadonlyArray<ResultBlock>): string | Array<Record<string, unknown>> {
  if (content.every((b) => b.type === "text")) return content.map((b) => (b as { text: string }).text).join("\n");
  return content.map((b) =>
    b.type === "text"
      ? { type: "text", text: b.text }
      : { type: "image", source: { type: "data", value: b.data, mimeType: b.mimeType } },
  );
}

/** Adds one call's usage to the run's entry of its provider and model (AG-UI counts input inclusively). */
function addUsage(usage: readonly TokenUsage[], provider: string, model: string, u: Usage): TokenUsage[] {
  const input = u.input + u.cacheRead + u.cacheWrite;
  const entry: TokenUsage = {
    provider,
    model,
    inputTokens: input,
    outputTokens: u.output,
    totalTokens: input + u.output,
    cachedInputTokens: u.cacheRead,
    cacheWriteInputTokens: u.cacheWrite,
  };
  const at = usage.findIndex((e) => e.provider === provider && e.model === model);
  if (at === -1) return [...usage, entry];
  return usage.map((e, i) => (i === at ? sumUsage(e, entry) : e));
}

const sumUsage = (a: TokenUsage, b: TokenUsage): TokenUsage => ({
  provider: a.provider,
  model: a.model,
  inputTokens: (a.inputTokens ?? 0) + (b.inputTokens ?? 0),
  outputTokens: (a.outputTokens ?? 0) + (b.outputTokens ?? 0),
  totalTokens: (a.totalTokens ?? 0) + (b.totalTokens ?? 0),
  cachedInputTokens: (a.cachedInputTokens ?? 0) + (b.cachedInputTokens ?? 0),
  cacheWriteInputTokens: (a.cacheWriteInputTokens ?? 0) + (b.cacheWriteInputTokens ?? 0),
});

/** The thread's state after `event`: queues from `queue_update`, spend as `foldSessionSpend` counts it. */
function nextState(state: AguiState, event: FleetEvent): AguiState {
  switch (event.type) {
    case "queue_update":
      return {
        ...state,
        queues: {
          steer: event.steer.map(queuedText),
          followUp: event.followUp.map(queuedText),
          nextTurn: event.nextTurn.map(queuedText),
        },
      };
    case "session_created":
      return { ...state, spend: { ...state.spend, budget: event.config.budget ?? {} } };
    case "budget_change":
      return { ...state, spend: { ...state.spend, budget: event.budget } };
    case "agent_start":
      return { ...state, spend: { ...state.spend, run: emptySpend() } };
    default: {
      const used = spendOfEvent(event);
      if (!used) return state;
      return {
        ...state,
        spend: { ...state.spend, session: plus(state.spend.session, used), run: plus(state.spend.run, used) },
      };
    }
  }
}

const plus = (a: Spend, b: Spend): Spend => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  totalTokens: a.totalTokens + b.totalTokens,
  costUsd: a.costUsd + b.costUsd,
});

const queuedText = (m: AgentMessage): string =>
  m.role === "user" || m.role === "custom" ? textOf(m as { content: string | Array<{ type: string }> }) : "";

/** `replace` operations for the parts of the state that changed (queues and spend, by field). */
export function stateDelta(before: AguiState, after: AguiState): JsonPatchOperation[] {
  const ops: JsonPatchOperation[] = [];
  for (const key of ["steer", "followUp", "nextTurn"] as const) {
    if (JSON.stringify(before.queues[key]) !== JSON.stringify(after.queues[key]))
      ops.push({ op: "replace", path: `/queues/${key}`, value: after.queues[key] });
  }
  for (const key of ["session", "run", "budget"] as const) {
    if (JSON.stringify(before.spend[key]) !== JSON.stringify(after.spend[key]))
      ops.push({ op: "replace", path: `/spend/${key}`, value: after.spend[key] });
  }
  return ops;
}
