// The typed command methods of FleetClient: each builds one command body and sends it with `send`.
import type {
  ApprovalRule,
  CommandOf,
  CompactionSettings,
  ModelRef,
  ReplayRequest,
  SessionConfigPatch,
  ThinkingLevel,
} from "@fleet/protocol";
import type {
  CommandBody,
  CommandOptions,
  CommandOutcome,
  CreateSessionOptions,
  ImportInput,
} from "./command-options.js";
import { newSessionId } from "./ids.js";
import { type MessageInput, toMessageFields } from "./message-input.js";

/**
 * One method per command of the protocol. Contract: each resolves as `send` does (on the command's
 * `command_accepted`) and rejects as it does (`CommandRejectedError` on `command_rejected`).
 */
export abstract class SessionCommands {
  /** Sends any command to a session (the generic form of the methods below). */
  abstract send(sessionId: string, body: CommandBody, opts?: CommandOptions): Promise<CommandOutcome>;

  /** Creates a session (optionally as a fork); resolves with its id once accepted. */
  async createSession(
    config: SessionConfigPatch = {},
    opts: CreateSessionOptions = {},
  ): Promise<CommandOutcome & { sessionId: string }> {
    const sessionId = opts.sessionId ?? newSessionId();
    const body: Omit<CommandOf<"create_session">, "id" | "sessionId" | "ts"> = { type: "create_session", config };
    if (opts.forkFrom) body.forkFrom = opts.forkFrom;
    if (opts.agent !== undefined) body.agent = opts.agent;
    return this.send(sessionId, body, opts);
  }

  /**
   * Moves the session to an agent's version (`name`: its latest now, or `name@version`) at its next
   * turn boundary: `agent_change` is appended then (at once when idle). `not_found` when no such version.
   */
  setAgent(sessionId: string, agent: string, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "set_agent", agent }, opts);
  }

  /** `create_session` with `forkFrom: {sessionId, entryId}`: a new session holding that branch. */
  fork(
    sessionId: string,
    entryId: string,
    opts: Omit<CreateSessionOptions, "forkFrom"> & { config?: SessionConfigPatch } = {},
  ): Promise<CommandOutcome & { sessionId: string }> {
    return this.createSession(opts.config ?? {}, { ...opts, forkFrom: { sessionId, entryId } });
  }

  /**
   * `replay` (change 51): a new session that forks `sourceSessionId`'s current branch at `fromEntry`
   * (default: before its first user message) and runs the user messages after it again, with the
   * overrides, tools `recorded` (default) or `live`. Resolves once accepted, with the new session's
   * id; the loop then runs the turns (`waitForReplay`).
   */
  replayWith(
    sourceSessionId: string,
    opts: Omit<ReplayRequest, "sessionId"> & CommandOptions & { sessionId?: string } = {},
  ): Promise<CommandOutcome & { sessionId: string }> {
    const { fromEntry, overrides, toolsMode, sessionId = newSessionId(), ...commandOpts } = opts;
    const replayOf: ReplayRequest = {
      sessionId: sourceSessionId,
      ...(fromEntry !== undefined ? { fromEntry } : {}),
      ...(overrides ? { overrides } : {}),
      ...(toolsMode ? { toolsMode } : {}),
    };
    return this.send(sessionId, { type: "replay", replayOf }, commandOpts);
  }

  /** Starts a run (`busy` while one is active). A prompt to an unknown session creates it with defaults. */
  prompt(sessionId: string, input: MessageInput, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "prompt", ...toMessageFields(input) } as CommandBody, opts);
  }
  /** Queues a steering message (delivered after the current tool batch; queued for the next run when idle). */
  steer(sessionId: string, input: MessageInput, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "steer", ...toMessageFields(input) } as CommandBody, opts);
  }
  /** Queues a follow-up message (delivered when the agent would otherwise stop). */
  followUp(sessionId: string, input: MessageInput, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "follow_up", ...toMessageFields(input) } as CommandBody, opts);
  }
  /** Queues a message for the start of the next run. */
  nextTurn(sessionId: string, input: MessageInput, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "next_turn", ...toMessageFields(input) } as CommandBody, opts);
  }
  /** Continues from the current context (`conflict` when there is nothing to continue). */
  continue(sessionId: string, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "continue" }, opts);
  }
  /** Aborts the active run (a no-op when idle). */
  abort(sessionId: string, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "abort" }, opts);
  }
  setModel(sessionId: string, model: ModelRef, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "set_model", provider: model.provider, modelId: model.modelId }, opts);
  }
  setThinkingLevel(sessionId: string, level: ThinkingLevel, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "set_thinking_level", level }, opts);
  }
  setActiveTools(sessionId: string, toolNames: string[], opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "set_active_tools", toolNames }, opts);
  }
  configure(sessionId: string, patch: SessionConfigPatch, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "configure", ...patch }, opts);
  }
  /** Automatic compaction settings (`enabled`, `reserveTokens`, `keepRecentTokens`); absent fields are kept. */
  setCompactionSettings(
    sessionId: string,
    settings: Partial<CompactionSettings>,
    opts?: CommandOptions,
  ): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "set_compaction_settings", ...settings }, opts);
  }
  compact(sessionId: string, instructions?: string, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "compact", ...(instructions ? { instructions } : {}) }, opts);
  }
  /** Moves the leaf (`null` = before the first entry); optionally summarizes the abandoned branch. */
  navigate(
    sessionId: string,
    targetId: string | null,
    opts: CommandOptions & { summarize?: boolean; instructions?: string; label?: string } = {},
  ): Promise<CommandOutcome> {
    const { summarize, instructions, label, ...rest } = opts;
    const body: CommandBody = {
      type: "navigate",
      targetId,
      ...(summarize !== undefined ? { summarize } : {}),
      ...(instructions !== undefined ? { instructions } : {}),
      ...(label !== undefined ? { label } : {}),
    };
    return this.send(sessionId, body, rest);
  }
  /** Sets (or, with `null`, removes) the label of an entry. */
  label(sessionId: string, targetId: string, label: string | null, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "label", targetId, label }, opts);
  }
  setName(sessionId: string, name: string, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "set_name", name }, opts);
  }
  appendCustom(sessionId: string, customType: string, data: unknown, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "append_custom", customType, data }, opts);
  }
  appendMessage(
    sessionId: string,
    message: CommandOf<"append_message">["message"],
    opts: CommandOptions & { deliverAs?: "steer" | "followUp" | "nextTurn"; triggerTurn?: boolean } = {},
  ): Promise<CommandOutcome> {
    const { deliverAs, triggerTurn, ...rest } = opts;
    const body: CommandBody = {
      type: "append_message",
      message,
      ...(deliverAs !== undefined ? { deliverAs } : {}),
      ...(triggerTurn !== undefined ? { triggerTurn } : {}),
    };
    return this.send(sessionId, body, rest);
  }
  /**
   * Approves a call waiting for a decision. `args`: run it with these arguments instead of the
   * model's (checked against the tool's schema by the loop; refused `invalid` when they do not fit).
   */
  approveToolCall(
    sessionId: string,
    toolCallId: string,
    opts: CommandOptions & { args?: unknown } = {},
  ): Promise<CommandOutcome> {
    const { args, ...rest } = opts;
    return this.send(
      sessionId,
      { type: "approve_tool_call", toolCallId, ...(args !== undefined ? { args } : {}) },
      rest,
    );
  }
  /** Replaces the session's approval rules (`[]`: none); they apply from the next tool call on. */
  setApprovalRules(sessionId: string, rules: ApprovalRule[], opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "set_approval_rules", rules }, opts);
  }
  denyToolCall(sessionId: string, toolCallId: string, reason?: string, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "deny_tool_call", toolCallId, ...(reason ? { reason } : {}) }, opts);
  }
  /** Creates a new session holding an imported tree (`import_session`); the loop re-mints entry ids. */
  importSession(
    input: ImportInput,
    opts: CommandOptions & { sessionId?: string } = {},
  ): Promise<CommandOutcome & { sessionId: string }> {
    const { sessionId = newSessionId(), ...rest } = opts;
    const body: CommandBody = {
      type: "import_session",
      entries: input.entries,
      ...(input.leafId !== undefined ? { leafId: input.leafId } : {}),
      ...(input.config !== undefined ? { config: input.config } : {}),
    };
    return this.send(sessionId, body, rest);
  }
}
