// Agents in the decider (PROTOCOL "Agents"): a session created from an agent's version, and
// `set_agent`, which moves a session to another version at its next turn boundary.
import {
  type AgentSettings,
  type AgentVersion,
  agentSessionConfig,
  applyConfigPatch,
  type CommandOf,
  parseAgentRef,
  type SessionState,
  type SessionWrite,
} from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import { decideSessionWrite } from "../session-core/session-write.js";
import { accepted, type OutcomeContext, rejected } from "./command-outcomes.js";
import type { Decision } from "./decision.js";

export const AGENT_TEXT = {
  notFound: (ref: string) => `Agent ${ref} not found`,
  withFork: "`agent` and `forkFrom` do not combine: a fork takes its source's config",
  badRef: (ref: string) => `${JSON.stringify(ref)} is not an agent name or name@version`,
} as const;

/** The version a command names, or what the shell must fetch first, or the rejection of a missing one. */
function resolveVersion(
  cmd: CommandOf<"create_session" | "set_agent">,
  ref: string,
  ctx: OutcomeContext,
): { ok: true; version: AgentVersion } | { ok: false; decision: Decision } {
  const parsed = parseAgentRef(ref);
  if (!parsed) return { ok: false, decision: rejected(ctx, cmd.id, cmd.type, "invalid", AGENT_TEXT.badRef(ref)) };
  const found = ctx.agentVersion;
  if (found === undefined) {
    return { ok: false, decision: { kind: "needs_agent_version", name: parsed.name, version: parsed.version } };
  }
  if (
    found === null ||
    found.name !== parsed.name ||
    (parsed.version !== undefined && found.version !== parsed.version)
  ) {
    return { ok: false, decision: rejected(ctx, cmd.id, cmd.type, "not_found", AGENT_TEXT.notFound(ref)) };
  }
  return { ok: true, version: found };
}

/**
 * `create_session {agent}`: `session_created {config, agent}` with the version's settings as the
 * config (fields of `config` replace them), then, when the version has approval rules,
 * `agent_change {agent, approvalRules}` (scope `agent_version`).
 */
export function decideCreateFromAgent(cmd: CommandOf<"create_session">, ref: string, ctx: OutcomeContext): Decision {
  if (cmd.forkFrom) return rejected(ctx, cmd.id, cmd.type, "invalid", AGENT_TEXT.withFork);
  const resolved = resolveVersion(cmd, ref, ctx);
  if (!resolved.ok) return resolved.decision;
  const { name, version, settings } = resolved.version;
  const config = applyConfigPatch(agentSessionConfig(ctx.defaults, settings), cmd.config ?? {});
  const drafts: DraftEvent[] = [
    { id: ctx.newId(), body: { type: "session_created", config, agent: { name, version } } },
  ];
  if (settings.approvalRules && settings.approvalRules.length > 0) {
    const approvalRules = settings.approvalRules;
    drafts.push({ id: ctx.newId(), body: { type: "agent_change", agent: { name, version }, approvalRules } });
  }
  return accepted(ctx, cmd, drafts);
}

/**
 * `set_agent`: the version's model, thinking level and active tools as their entries, then
 * `agent_change` with the rest. Carried out at once when idle; during a run or a compaction they
 * are `pending_write`s, flushed at the next turn boundary (after `turn_end`, before `agent_end`).
 */
export function decideSetAgent(state: SessionState, cmd: CommandOf<"set_agent">, ctx: OutcomeContext): Decision {
  const resolved = resolveVersion(cmd, cmd.agent, ctx);
  if (!resolved.ok) return resolved.decision;
  const { name, version, settings } = resolved.version;
  const drafts = agentWrites(name, version, settings).flatMap((w) => decideSessionWrite(state, w, cmd.id, ctx.newId));
  return accepted(ctx, cmd, drafts);
}

/** The writes that put a session on a version, in order; `agent_change` last. */
export function agentWrites(name: string, version: number, settings: AgentSettings): SessionWrite[] {
  const out: SessionWrite[] = [];
  if (settings.model) out.push({ type: "model_change", ...settings.model });
  if (settings.thinkingLevel) out.push({ type: "thinking_level_change", thinkingLevel: settings.thinkingLevel });
  if (settings.activeTools) out.push({ type: "active_tools_change", toolNames: settings.activeTools.slice() });
  out.push({
    type: "agent_change",
    agent: { name, version },
    ...(settings.systemPrompt !== undefined ? { systemPrompt: settings.systemPrompt } : {}),
    ...(settings.compaction ? { compaction: settings.compaction } : {}),
    ...(settings.budget ? { budget: settings.budget } : {}),
    ...(settings.approvalRules ? { approvalRules: settings.approvalRules } : {}),
  });
  return out;
}
