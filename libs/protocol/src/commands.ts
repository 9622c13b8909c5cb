import { z } from "zod";
import { AgentRef } from "./agents.js";
import { ApprovalRules } from "./approval-rules.js";
import { SessionBudget } from "./budget.js";
import { CompactionSettings, ModelRef, SessionConfigPatch } from "./config.js";
import { ImageContent } from "./content.js";
import { EventId, SessionId, ToolCallId, ToolName } from "./ids.js";
import { Requester } from "./lifecycle.js";
import { CustomMessage, ThinkingLevel, UserMessage } from "./messages.js";
import { ReplayRequest } from "./replay/replay-record.js";
import { SessionEntry } from "./session-entry.js";
import { ParentLink } from "./sub-agents.js";
import { Traceparent, Tracestate } from "./trace/trace-context.js";

const envelope = {
  id: z.string().min(1).max(256),
  sessionId: SessionId,
  ts: z.number().int().nonnegative().optional(),
  /**
   * W3C trace context (change 46): the caller's span. The loop records it on the command's
   * `command_accepted`; the run the command starts is a child of it in the traces derived from the log.
   */
  traceparent: Traceparent.optional(),
  tracestate: Tracestate.optional(),
};
const cmd = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ type: z.literal(type), ...envelope, ...shape });

/**
 * A message input: `{text}` (one user text block) or `{message}` (a user or custom AgentMessage);
 * either may add images. Exactly one of `text` and `message` is required.
 */
const messageInput = {
  text: z.string().optional(),
  message: z.discriminatedUnion("role", [UserMessage, CustomMessage]).optional(),
  images: z.array(ImageContent).optional(),
};
const exactlyOneInput = (value: { text?: string | undefined; message?: unknown }) =>
  (value.text !== undefined) !== (value.message !== undefined);
const inputCmd = <T extends string>(type: T) =>
  cmd(type, messageInput).refine(exactlyOneInput, { message: "exactly one of `text` and `message` is required" });

/**
 * `agent` (Fleet addition, change 54): create the session from an agent's version, `name` (the latest,
 * pinned now) or `name@version`; the version's settings are its config, and fields of `config` replace
 * theirs. Not with `forkFrom`.
 */
export const CreateSessionCommand = cmd("create_session", {
  config: SessionConfigPatch.optional(),
  forkFrom: z.object({ sessionId: SessionId, entryId: EventId }).optional(),
  agent: AgentRef.optional(),
  /** A child session started by a parent's `agent` call (change 57); copied to `session_created.parent`. */
  parent: ParentLink.optional(),
});
/**
 * Fleet addition (change 51): creates session `sessionId` as a replay of `replayOf.sessionId`: a fork
 * of its current branch at `fromEntry` whose later user messages the loop runs again, one run each,
 * with the overrides and the tools mode. Refused `not_found` (no source, no such entry), `invalid`
 * (nothing to replay, a record too large for one event), `conflict` (the session exists).
 */
export const ReplayCommand = cmd("replay", { replayOf: ReplayRequest });
export const PromptCommand = inputCmd("prompt");
export const SteerCommand = inputCmd("steer");
export const FollowUpCommand = inputCmd("follow_up");
export const NextTurnCommand = inputCmd("next_turn");
export const ContinueCommand = cmd("continue", {});
export const AbortCommand = cmd("abort", {});
export const SetModelCommand = cmd("set_model", ModelRef.shape);
export const SetThinkingLevelCommand = cmd("set_thinking_level", { level: ThinkingLevel });
export const SetActiveToolsCommand = cmd("set_active_tools", { toolNames: z.array(ToolName) });
export const ConfigureCommand = cmd("configure", SessionConfigPatch.shape);
/**
 * Fleet addition: changes the session's automatic compaction settings; fields absent keep their
 * current value. Appended as `config_change {compaction}` (the whole settings).
 */
export const SetCompactionSettingsCommand = cmd("set_compaction_settings", CompactionSettings.partial().shape);
export const CompactCommand = cmd("compact", { instructions: z.string().optional() });
export const NavigateCommand = cmd("navigate", {
  targetId: EventId.nullable(),
  summarize: z.boolean().optional(),
  instructions: z.string().optional(),
  label: z.string().optional(),
});
export const LabelCommand = cmd("label", { targetId: EventId, label: z.string().nullable() });
export const SetNameCommand = cmd("set_name", { name: z.string().max(512) });
export const AppendCustomCommand = cmd("append_custom", { customType: z.string().min(1), data: z.unknown() });
export const AppendMessageCommand = cmd("append_message", {
  message: z.discriminatedUnion("role", [UserMessage, CustomMessage]),
  deliverAs: z.enum(["steer", "followUp", "nextTurn"]).optional(),
  triggerTurn: z.boolean().optional(),
});
/** Fleet addition: replaces the session's run and session budget (`budget_change`), at once, even mid-run. */
export const SetBudgetCommand = cmd("set_budget", { budget: SessionBudget });
/**
 * Approves a waiting call; with `args`, the call runs with these arguments instead of the model's
 * (validated against the tool's schema: invalid ones are refused `invalid`).
 */
export const ApproveToolCallCommand = cmd("approve_tool_call", {
  toolCallId: ToolCallId,
  args: z.unknown().optional(),
});
export const DenyToolCallCommand = cmd("deny_tool_call", { toolCallId: ToolCallId, reason: z.string().optional() });
/**
 * Fleet addition (change 54): moves the session to another version of an agent (`name`: its latest
 * now, or `name@version`), at the session's next turn boundary (`agent_change`).
 */
export const SetAgentCommand = cmd("set_agent", { agent: AgentRef });
/** Fleet addition: replaces the session's approval rules (`approval_rules_set`), at once, even mid-run. */
export const SetApprovalRulesCommand = cmd("set_approval_rules", { rules: ApprovalRules });
/**
 * Fleet addition: creates a new session holding an imported tree (pi v3 JSONL). The loop re-mints
 * every entry id, keeps the parent structure, and records the original id in nothing but order.
 */
export const ImportSessionCommand = cmd("import_session", {
  config: SessionConfigPatch.optional(),
  entries: z.array(SessionEntry).max(100_000),
  leafId: EventId.nullable().optional(),
});
/**
 * Fleet addition: removes the session's events, projection, blobs, workspace, tool results and
 * budget keys, after rolling its spend into the tenant's ledger (PROTOCOL "Session lifecycle").
 * Refused `busy` while a run or compaction is open. `by` names who asked, for the lifecycle record.
 */
export const DeleteSessionCommand = cmd("delete_session", { by: Requester.optional() });
/** Fleet addition: writes the session's whole log to the archive, then deletes it as `delete_session`. */
export const ArchiveSessionCommand = cmd("archive_session", { by: Requester.optional() });
/** Fleet addition: brings an archived session back with the same id and history. */
export const RestoreSessionCommand = cmd("restore_session", { by: Requester.optional() });

export const FleetCommand = z.discriminatedUnion("type", [
  CreateSessionCommand,
  PromptCommand,
  SteerCommand,
  FollowUpCommand,
  NextTurnCommand,
  ContinueCommand,
  AbortCommand,
  SetModelCommand,
  SetThinkingLevelCommand,
  SetActiveToolsCommand,
  ConfigureCommand,
  CompactCommand,
  SetCompactionSettingsCommand,
  NavigateCommand,
  LabelCommand,
  SetNameCommand,
  AppendCustomCommand,
  AppendMessageCommand,
  ApproveToolCallCommand,
  DenyToolCallCommand,
  SetApprovalRulesCommand,
  ImportSessionCommand,
  SetBudgetCommand,
  DeleteSessionCommand,
  ArchiveSessionCommand,
  RestoreSessionCommand,
  ReplayCommand,
  SetAgentCommand,
]);
export type FleetCommand = z.infer<typeof FleetCommand>;
export type FleetCommandType = FleetCommand["type"];
export type CommandOf<T extends FleetCommandType> = Extract<FleetCommand, { type: T }>;

export const COMMAND_TYPES = FleetCommand.options.map((o) => o.shape.type.value) as FleetCommandType[];

/** The minimal envelope read before full validation, to tell `unsupported` from `invalid`. */
export const CommandEnvelope = z.object({ type: z.string(), id: z.string().min(1), sessionId: z.string() });

/**
 * The `Nats-Msg-Id` of a command stored again because its first copy, at stream sequence `seq`,
 * was lost (PROTOCOL "Re-sending"): re-senders of one lost copy store one more copy, not one each.
 */
export const resentCommandMsgId = (commandId: string, seq: number) => `${commandId}#${seq}`;
