// Agents (PROTOCOL "Agents"): named, versioned definitions of a session's settings, kept in KV
// `fleet_agents` of the tenant's account. A version is written once and never changed.
import { z } from "zod";
import { ApprovalRules } from "./approval-rules.js";
import { SessionBudget } from "./budget.js";
import { applyConfigPatch, CompactionSettings, ModelRef, type SessionConfig } from "./config.js";
import { ToolName } from "./ids.js";
import { ThinkingLevel } from "./messages.js";

/** An agent's name: a KV key token (no dots, no wildcards), 1–64 characters. */
export const AgentName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "must match ^[A-Za-z0-9_-]{1,64}$");
export type AgentName = z.infer<typeof AgentName>;

/** A version number: 1, 2, 3… in the order the versions were written. */
export const AgentVersionNumber = z.number().int().positive().max(999_999_999);

const AGENT_REF = /^([A-Za-z0-9_-]{1,64})(?:@([1-9][0-9]{0,8}))?$/;

/** `name` (the latest version, resolved when the command is decided) or `name@version`. */
export const AgentRef = z.string().regex(AGENT_REF, "an agent name, or name@version (version 1, 2, …)");
export type AgentRef = z.infer<typeof AgentRef>;

/** The parts of an agent reference (`version` absent: the latest), or undefined when it is not one. */
export function parseAgentRef(ref: string): { name: string; version?: number } | undefined {
  const match = AGENT_REF.exec(ref);
  if (!match) return undefined;
  const name = match[1] as string;
  return match[2] === undefined ? { name } : { name, version: Number(match[2]) };
}

/** The version a session runs: on `session_created {agent}` and `agent_change`. */
export const SessionAgent = z.object({ name: AgentName, version: AgentVersionNumber });
export type SessionAgent = z.infer<typeof SessionAgent>;

/**
 * What a version sets on the sessions that run it. Fields absent keep the default (at creation) or
 * the session's current value (on `set_agent`); `activeTools: null` is every registered tool.
 */
export const AgentSettings = z
  .object({
    model: ModelRef.optional(),
    thinkingLevel: ThinkingLevel.optional(),
    systemPrompt: z
      .string()
      .max(256 * 1024)
      .optional(),
    activeTools: z.array(ToolName).nullable().optional(),
    compaction: CompactionSettings.optional(),
    budget: SessionBudget.optional(),
    /** Approval rules the session starts with (its `session`-scope rules; PROTOCOL "Tool approvals"). */
    approvalRules: ApprovalRules.optional(),
  })
  .strict();
export type AgentSettings = z.infer<typeof AgentSettings>;

/** One version, as stored under `<name>.v<version>` (written with create: never replaced). */
export const AgentVersion = z.object({
  name: AgentName,
  version: AgentVersionNumber,
  description: z.string().max(4096).optional(),
  settings: AgentSettings,
  /** ms since the epoch. */
  createdAt: z.number().int().nonnegative(),
});
export type AgentVersion = z.infer<typeof AgentVersion>;

/** The latest-version pointer `<name>.latest`: moved forward only, by compare-and-set. */
export const AgentLatest = z.object({ version: AgentVersionNumber, updatedAt: z.number().int().nonnegative() });
export type AgentLatest = z.infer<typeof AgentLatest>;

/** Keys of KV `fleet_agents`. */
export const AGENT_KEYS = {
  version: (name: string, version: number) => `${name}.v${version}`,
  latest: (name: string) => `${name}.latest`,
  /** Every key of one agent (a KV key filter). */
  ofAgent: (name: string) => `${name}.>`,
  /** Every latest pointer (a KV key filter): one per agent. */
  latestPointers: "*.latest",
} as const;

/** `name@version`, or "" for none: how a session's version is written where a string is needed. */
export const agentRefOf = (agent: SessionAgent | null | undefined): string =>
  agent ? `${agent.name}@${agent.version}` : "";

/** The version number of a `<name>.v<N>` key, or undefined for any other key. */
export function versionOfKey(key: string): { name: string; version: number } | undefined {
  const match = /^([A-Za-z0-9_-]{1,64})\.v([1-9][0-9]{0,8})$/.exec(key);
  return match ? { name: match[1] as string, version: Number(match[2]) } : undefined;
}

/** The session config a version gives a session created from `base` (the defaults). */
export function agentSessionConfig(base: SessionConfig, settings: AgentSettings): SessionConfig {
  const { approvalRules: _rules, ...patch } = settings;
  return applyConfigPatch(base, patch);
}
