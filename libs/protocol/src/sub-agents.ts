// Sub-agents as child sessions (PROTOCOL "Sub-agents", change 57): the built-in `agent` tool, the
// link a child's `session_created` holds to its parent, and the identities derived from the parent's
// tool call, so that any worker, at any time, derives the same child and the same commands.
import { z } from "zod";
import { AgentRef } from "./agents.js";
import { Spend } from "./budget.js";
import { EventId, SessionId, ToolCallId } from "./ids.js";
import type { AgentMessage } from "./messages.js";
import { fnv1a32 } from "./partition.js";
import type { SessionEntry } from "./session-entry.js";

/** The built-in tool's name: the loop executes it, no runner. */
export const AGENT_TOOL_NAME = "agent";

/**
 * What happens to a child when its parent's run is aborted (Temporal's parent-close policy):
 * `terminate` sends it an `abort`; `request_cancel` steers it with a request to stop (it may finish
 * its turn); `abandon` leaves it running. The parent's call ends `Operation aborted` in every case.
 */
export const ChildClosePolicy = z.enum(["terminate", "request_cancel", "abandon"]);
export type ChildClosePolicy = z.infer<typeof ChildClosePolicy>;

/** On a child's `create_session` and `session_created`: the parent's session, run and `agent` call. */
export const ParentLink = z.object({
  sessionId: SessionId,
  runId: EventId,
  toolCallId: ToolCallId,
  /** 1 for a child of a root session, 2 for a grandchild, … */
  depth: z.number().int().positive(),
  /** Decided when the child was started; the parent's abort applies it. */
  closePolicy: ChildClosePolicy,
});
export type ParentLink = z.infer<typeof ParentLink>;

/** The `agent` tool's arguments. */
export const AgentToolArgs = z.object({
  agent: AgentRef.optional(),
  prompt: z.string().min(1),
  description: z.string().max(512).optional(),
});
export type AgentToolArgs = z.infer<typeof AgentToolArgs>;

/** `partialResult` of the parent's `tool_execution_update` for an `agent` call (throttled). */
export const ChildProgress = z.object({
  childSessionId: SessionId,
  /** The child's last event type seen, and what it was doing: the tool it started, its text so far. */
  event: z.string(),
  toolName: z.string().optional(),
  text: z.string().optional(),
});
export type ChildProgress = z.infer<typeof ChildProgress>;

/**
 * `details` of an `agent` call's result: the child, and what its run spent (its own children's
 * spend included). The parent's fold adds `spend` to its run and session totals (its budget), not
 * to its day records: the tenant's totals count the child as a session of its own.
 */
export const ChildResultDetails = z.object({
  childSessionId: SessionId,
  spend: Spend.optional(),
});
export type ChildResultDetails = z.infer<typeof ChildResultDetails>;

/** 32 lowercase hex digits from four salted FNV-1a hashes: pure, and the same in every runtime. */
function hash128(value: string): string {
  let out = "";
  for (const salt of ["a", "b", "c", "d"]) out += fnv1a32(`${salt}\u0000${value}`).toString(16).padStart(8, "0");
  return out;
}

/** The child session an `agent` call starts: `sub-<32 hex>` of the parent's session id and the call id. */
export const childSessionId = (parentSessionId: string, toolCallId: string): string =>
  `sub-${hash128(`${parentSessionId}\u0000${toolCallId}`)}`;

/** The ids of the commands the parent's owner sends its child, derived from the child's id only. */
export const childCommandIds = (childId: string) =>
  ({
    create: `sub.${childId}.create`,
    prompt: `sub.${childId}.prompt`,
    abort: `sub.${childId}.abort`,
    cancel: `sub.${childId}.cancel`,
  }) as const;

/** The text a stopped parent sends a child under `request_cancel`. */
export const CHILD_CANCEL_TEXT = "The parent session was stopped: wrap up now and end with a short summary.";

/** The final assistant text of a run's messages (`agent_end.messages`), or `undefined` when it has none. */
export function finalAssistantText(messages: readonly AgentMessage[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role !== "assistant") continue;
    const text = m.content
      .filter((b): b is { type: "text"; text: string } => b.type === "text")
      .map((b) => b.text)
      .join("");
    if (m.stopReason === "error" || m.stopReason === "aborted") return undefined;
    return text;
  }
  return undefined;
}

/** The JSON Schema of the `agent` tool, and its description naming the agents a model may call. */
export function agentToolDefinition(agents: readonly { name: string; description?: string | undefined }[]): {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
} {
  const listed =
    agents.length === 0
      ? "No named agents are defined: leave `agent` out and the child runs with the default settings."
      : `Agents you may name in \`agent\`:\n${agents
          .map((a) => `- ${a.name}${a.description ? `: ${a.description.replace(/\s+/g, " ").slice(0, 200)}` : ""}`)
          .join("\n")}`;
  return {
    name: AGENT_TOOL_NAME,
    description:
      "Hand a task to a sub-agent: a new child session runs `prompt` to its end and its final answer is this tool's " +
      "result. Several calls in one message run in parallel. " +
      listed,
    parameters: {
      type: "object",
      properties: {
        agent: { type: "string", description: "The agent to run: name or name@version; absent: default settings." },
        prompt: { type: "string", minLength: 1, description: "The task, complete: the child sees nothing else." },
        description: { type: "string", maxLength: 512, description: "A short label for the task." },
      },
      required: ["prompt"],
      additionalProperties: false,
    },
  };
}

/** What an `agent` call's `tool_execution_end` brings into its session's spend: its child's, or nothing. */
export function childSpendOf(toolName: string, details: unknown): Spend | undefined {
  if (toolName !== AGENT_TOOL_NAME) return undefined;
  const parsed = ChildResultDetails.safeParse(details);
  return parsed.success ? parsed.data.spend : undefined;
}

/** One `agent` call of a session's transcript and the child it starts. */
export interface ChildCall {
  toolCallId: string;
  childSessionId: string;
  agent: string | undefined;
  description: string | undefined;
}

/**
 * The `agent` calls in a session's assistant messages, in order, each with its child's id (a call
 * the run never started has no child session yet: its log is empty).
 */
export function childCallsOf(entries: readonly SessionEntry[], sessionId: string): ChildCall[] {
  const out: ChildCall[] = [];
  for (const entry of entries) {
    if (entry.type !== "message" || entry.message.role !== "assistant") continue;
    for (const block of entry.message.content) {
      if (block.type !== "toolCall" || block.name !== AGENT_TOOL_NAME) continue;
      const args = AgentToolArgs.partial().safeParse(block.arguments);
      out.push({
        toolCallId: block.id,
        childSessionId: childSessionId(sessionId, block.id),
        agent: args.success ? args.data.agent : undefined,
        description: args.success ? args.data.description : undefined,
      });
    }
  }
  return out;
}
