// Planning a replay (change 51): what a replay keeps of its source and what it runs again. Pure.
import type { ToolResultMessage, UserMessage } from "../messages.js";
import { getBranch, type SessionTree } from "../reducers/session-tree.js";
import type { SessionEntry } from "../session-entry.js";
import type { RecordedToolCall, ReplayRecord, ReplayRequest } from "./replay-record.js";

/** What a replay keeps of its source and what it records, or why it cannot be made. */
export type ReplayPlan =
  | { ok: true; kept: SessionEntry[]; record: ReplayRecord }
  | { ok: false; code: "not_found" | "invalid"; error: string };

/** Plans a replay of `source` (its tree) at its current leaf. Contract: never throws. */
export function planReplay(source: SessionTree, request: ReplayRequest): ReplayPlan {
  const branch = getBranch(source, source.leafId);
  if (!branch.ok) return { ok: false, code: "not_found", error: branch.error };
  const entries = branch.entries;
  let cut: number;
  if (request.fromEntry !== undefined) {
    cut = entries.findIndex((e) => e.id === request.fromEntry) + 1;
    if (cut === 0) {
      return {
        ok: false,
        code: "not_found",
        error: `Entry ${request.fromEntry} is not on the current branch of ${request.sessionId}`,
      };
    }
  } else {
    const first = entries.findIndex(isUserMessageEntry);
    cut = first < 0 ? entries.length : first;
  }
  const kept = entries.slice(0, cut);
  const after = entries.slice(cut);
  const turns = after.flatMap((e) =>
    e.type === "message" && e.message.role === "user" ? [e.message as UserMessage] : [],
  );
  if (turns.length === 0)
    return { ok: false, code: "invalid", error: "No user message to replay after the fork point" };
  const toolsMode = request.toolsMode ?? "recorded";
  return {
    ok: true,
    kept,
    record: {
      sessionId: request.sessionId,
      fromEntry: kept.at(-1)?.id ?? null,
      kept: kept.length,
      toEntry: entries.at(-1)?.id ?? null,
      overrides: request.overrides ?? {},
      toolsMode,
      turns,
      recorded: toolsMode === "recorded" ? recordedCalls(after) : [],
    },
  };
}

const isUserMessageEntry = (e: SessionEntry): boolean => e.type === "message" && e.message.role === "user";

/** The tool calls of `entries`' assistant messages that have a result among `entries`, in result order. */
function recordedCalls(entries: readonly SessionEntry[]): RecordedToolCall[] {
  const calls = new Map<string, { name: string; args: unknown }>();
  const out: RecordedToolCall[] = [];
  for (const e of entries) {
    if (e.type !== "message") continue;
    const m = e.message;
    if (m.role === "assistant") {
      for (const block of m.content)
        if (block.type === "toolCall") calls.set(block.id, { name: block.name, args: block.arguments });
    } else if (m.role === "toolResult") {
      const result = m as ToolResultMessage;
      const call = calls.get(result.toolCallId);
      if (!call) continue;
      out.push({
        toolName: call.name,
        args: call.args,
        content: result.content,
        isError: result.isError,
        ...(result.details !== undefined ? { details: result.details } : {}),
      });
    }
  }
  return out;
}
