// The tenant's approval rules, from KV `fleet_config` key `approval_rules` (PROTOCOL "Approvals").
import { type ApprovalRule, CONFIG_KEYS, parseJson, TenantApprovalRules } from "@fleet/protocol";
import { type FollowKvOptions, followKv } from "@fleet/runtime";
import type { KV } from "@nats-io/kv";

/** A watch of the tenant's rules: the last valid record, or none. */
export interface TenantApprovalRulesView {
  /** Resolves once the record written before now is known. */
  ready: Promise<void>;
  /** The rules in force (empty: none, or the record is absent or invalid). */
  rules(): readonly ApprovalRule[];
  stop(): void;
}

const NONE: readonly ApprovalRule[] = [];

/**
 * Follows the key. A record that is not valid JSON of `TenantApprovalRules` counts as no rules, and
 * `onInvalid` is told (the writers validate it, so only a hand-written record gets there).
 */
export function watchTenantApprovalRules(
  kv: KV,
  onInvalid: (error: string) => void,
  follow: FollowKvOptions = {},
): TenantApprovalRulesView {
  let rules = NONE;
  const follower = followKv(
    kv,
    CONFIG_KEYS.approvalRules,
    (_key, operation, value) => {
      if (operation !== "PUT") {
        rules = NONE;
        return;
      }
      const json = parseJson(value);
      const parsed = json.ok ? TenantApprovalRules.safeParse(json.value) : undefined;
      if (parsed?.success) rules = parsed.data.rules;
      else {
        rules = NONE;
        onInvalid(json.ok ? (parsed?.error.message ?? "invalid") : json.error);
      }
    },
    follow,
  );
  return { ready: follower.ready, rules: () => rules, stop: () => follower.stop() };
}
