import { z } from "zod";
import { SessionBudget } from "./budget.js";
import { ToolName } from "./ids.js";
import { ThinkingLevel } from "./messages.js";

export const ModelRef = z.object({ provider: z.string().min(1), modelId: z.string().min(1) });
export type ModelRef = z.infer<typeof ModelRef>;

/**
 * A model's name as people write it: `provider/modelId` (split at the first `/`, so
 * `openrouter/anthropic/claude-sonnet-4` is provider `openrouter`), or a bare model id of `defaultProvider`.
 */
export function parseModelName(name: string, defaultProvider = "anthropic"): ModelRef {
  const slash = name.indexOf("/");
  return slash > 0
    ? { provider: name.slice(0, slash), modelId: name.slice(slash + 1) }
    : { provider: defaultProvider, modelId: name };
}

export const QueueMode = z.enum(["all", "one-at-a-time"]);
export type QueueMode = z.infer<typeof QueueMode>;

export const ToolExecutionMode = z.enum(["parallel", "sequential"]);
export type ToolExecutionMode = z.infer<typeof ToolExecutionMode>;

/**
 * pi coding-agent's automatic compaction settings. `enabled`: compact when the context passes
 * `contextWindow - reserveTokens` (threshold) and when the provider reports an overflow; `reserveTokens`
 * is also the summary request's budget (`0.8 ×`); `keepRecentTokens`: how much recent context is
 * kept verbatim (the cut point).
 */
export const CompactionSettings = z.object({
  enabled: z.boolean(),
  reserveTokens: z.number().int().nonnegative(),
  keepRecentTokens: z.number().int().nonnegative(),
});
export type CompactionSettings = z.infer<typeof CompactionSettings>;

/** pi coding-agent 0.73.1's `DEFAULT_COMPACTION_SETTINGS`. */
export const DEFAULT_COMPACTION_SETTINGS: Readonly<CompactionSettings> = Object.freeze({
  enabled: true,
  reserveTokens: 16_384,
  keepRecentTokens: 20_000,
});

/**
 * A session's resolved configuration, as recorded in `session_created`.
 * `activeTools: null` means every registered tool is active (resolved at each turn).
 */
export const SessionConfig = z.object({
  model: ModelRef,
  thinkingLevel: ThinkingLevel,
  systemPrompt: z.string(),
  activeTools: z.array(ToolName).nullable(),
  steeringMode: QueueMode,
  followUpMode: QueueMode,
  toolExecution: ToolExecutionMode,
  /** Token and cost limits per run and per session (absent: none). Changed by `set_budget`. */
  budget: SessionBudget.optional(),
  /** Absent in sessions created before the setting existed: `DEFAULT_COMPACTION_SETTINGS` apply. */
  compaction: CompactionSettings.optional(),
});
export type SessionConfig = z.infer<typeof SessionConfig>;

/** Any subset of the config, as sent by `create_session` and `configure`. */
export const SessionConfigPatch = SessionConfig.partial();
export type SessionConfigPatch = z.infer<typeof SessionConfigPatch>;

/** Merge rule: fields present in `patch` replace those of `base`; nothing is merged deeply. */
export function applyConfigPatch(base: SessionConfig, patch: SessionConfigPatch): SessionConfig {
  const next: SessionConfig = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value !== undefined) (next as Record<string, unknown>)[key] = value;
  }
  return next;
}

/**
 * The one default session config (PROTOCOL "Defaults"): pi's Agent defaults (thinking off, both
 * queues one-at-a-time, parallel tools, every registered tool active) with an Anthropic model and an
 * empty system prompt. Services and tests derive theirs with `applyConfigPatch`.
 */
export const DEFAULT_SESSION_CONFIG: Readonly<SessionConfig> = Object.freeze({
  model: { provider: "anthropic", modelId: "claude-sonnet-5" },
  thinkingLevel: "off",
  systemPrompt: "",
  activeTools: null,
  steeringMode: "one-at-a-time",
  followUpMode: "one-at-a-time",
  toolExecution: "parallel",
  compaction: DEFAULT_COMPACTION_SETTINGS,
});

/** `DEFAULT_SESSION_CONFIG` with the fields of `patch` in place (see `applyConfigPatch`). */
export const sessionConfigWith = (patch: SessionConfigPatch = {}): SessionConfig =>
  applyConfigPatch(DEFAULT_SESSION_CONFIG, patch);

/** The compaction settings in force for `config` (the defaults when it has none). */
export const compactionSettingsOf = (
  config: Pick<SessionConfig, "compaction"> | null | undefined,
): CompactionSettings => config?.compaction ?? DEFAULT_COMPACTION_SETTINGS;
