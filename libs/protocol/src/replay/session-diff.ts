// Two sessions compared turn by turn (change 51): what each turn said, called, spent and took.
// Pure: read from the sessions' events.
import type { FleetEvent } from "../events.js";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../messages.js";
import { canonicalJson } from "./replay-record.js";

/** One tool call of a turn and its result. */
export interface TurnToolCall {
  name: string;
  /** Canonical JSON of the arguments. */
  args: string;
  /** The result's text blocks, joined; `undefined` while no result is logged. */
  result: string | undefined;
  isError: boolean;
}

/** A turn: a user message and what the session appended after it up to the next one. */
export interface SessionTurn {
  /** The user message's text blocks, joined. */
  user: string;
  /** The assistant messages' text blocks, joined with a blank line. */
  assistant: string;
  /** `provider/model` of the turn's assistant messages (distinct, joined with `, `). */
  model: string;
  toolCalls: TurnToolCall[];
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  /** From the user message's event to the turn's last message event (ms). */
  latencyMs: number;
  /** Assistant messages that ended in error, with their messages. */
  errors: string[];
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content
          .filter((b): b is { type: "text"; text: string } => (b as { type?: unknown })?.type === "text")
          .map((b) => b.text)
          .join("")
      : "";

/**
 * The turns of a session's log, in order: each user `message_end` opens one (entries copied by a
 * fork or a replay included, so two sessions line up from their first user message).
 */
export function sessionTurns(events: readonly FleetEvent[]): SessionTurn[] {
  const turns: SessionTurn[] = [];
  let current: (SessionTurn & { startTs: number; models: Set<string> }) | undefined;
  const calls = new Map<string, TurnToolCall>();
  const close = () => {
    if (!current) return;
    const { startTs: _s, models, ...turn } = current;
    turns.push({ ...turn, model: [...models].join(", ") });
  };
  for (const event of events) {
    if (event.type !== "message_end") continue;
    const message = event.message as AgentMessage;
    if (message.role === "user") {
      close();
      current = {
        user: textOf(message.content),
        assistant: "",
        model: "",
        models: new Set(),
        toolCalls: [],
        inputTokens: 0,
        outputTokens: 0,
        costUsd: 0,
        latencyMs: 0,
        errors: [],
        startTs: event.meta.ts,
      };
      calls.clear();
      continue;
    }
    if (!current) continue;
    current.latencyMs = event.meta.ts - current.startTs;
    if (message.role === "assistant") {
      const a = message as AssistantMessage;
      const text = textOf(a.content);
      if (text) current.assistant = current.assistant ? `${current.assistant}\n\n${text}` : text;
      current.models.add(`${a.provider}/${a.model}`);
      current.inputTokens += a.usage.input + a.usage.cacheRead + a.usage.cacheWrite;
      current.outputTokens += a.usage.output;
      current.costUsd += a.usage.cost.total;
      if (a.stopReason === "error") current.errors.push(a.errorMessage ?? "error");
      for (const block of a.content) {
        if (block.type !== "toolCall") continue;
        const call: TurnToolCall = {
          name: block.name,
          args: canonicalJson(block.arguments),
          result: undefined,
          isError: false,
        };
        calls.set(block.id, call);
        current.toolCalls.push(call);
      }
    } else if (message.role === "toolResult") {
      const r = message as ToolResultMessage;
      const call = calls.get(r.toolCallId);
      if (call) {
        call.result = textOf(r.content);
        call.isError = r.isError;
      }
    }
  }
  close();
  return turns;
}

/** A field of a turn that differs between the two sessions (`a`/`b` as printed). */
export interface TurnDifference {
  /** 0-based turn index. */
  turn: number;
  field: "turn" | "user" | "assistant" | "model" | "tool_calls" | "tokens" | "cost" | "errors";
  a: string;
  b: string;
}

/** Two sessions side by side: their turns and what differs. Latency is shown, never a difference. */
export interface SessionDiff {
  a: SessionTurn[];
  b: SessionTurn[];
  differences: TurnDifference[];
  /** Tool calls (by position in their turn) whose name, arguments or result differ, or that only one side made. */
  divergedToolCalls: number;
}

const callText = (c: TurnToolCall) => `${c.name}(${c.args})${c.isError ? " error" : ""}: ${c.result ?? "(no result)"}`;
const usd = (n: number) => `$${n.toFixed(6)}`;

/** Compares `a` and `b` turn by turn (by index). */
export function diffSessionTurns(a: readonly SessionTurn[], b: readonly SessionTurn[]): SessionDiff {
  const differences: TurnDifference[] = [];
  let divergedToolCalls = 0;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (!x || !y) {
      differences.push({ turn: i, field: "turn", a: x ? "present" : "missing", b: y ? "present" : "missing" });
      divergedToolCalls += (x ?? y)?.toolCalls.length ?? 0;
      continue;
    }
    const add = (field: TurnDifference["field"], va: string, vb: string) => {
      if (va !== vb) differences.push({ turn: i, field, a: va, b: vb });
    };
    add("user", x.user, y.user);
    add("assistant", x.assistant, y.assistant);
    add("model", x.model, y.model);
    add("tool_calls", x.toolCalls.map(callText).join("\n"), y.toolCalls.map(callText).join("\n"));
    for (let k = 0; k < Math.max(x.toolCalls.length, y.toolCalls.length); k++) {
      const cx = x.toolCalls[k];
      const cy = y.toolCalls[k];
      if (!cx || !cy || callText(cx) !== callText(cy)) divergedToolCalls++;
    }
    add("tokens", `in ${x.inputTokens} · out ${x.outputTokens}`, `in ${y.inputTokens} · out ${y.outputTokens}`);
    add("cost", usd(x.costUsd), usd(y.costUsd));
    add("errors", x.errors.join("; "), y.errors.join("; "));
  }
  return { a: a.slice(), b: b.slice(), differences, divergedToolCalls };
}
