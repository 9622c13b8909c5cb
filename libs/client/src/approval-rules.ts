// The SDK's calls on approval rules (PROTOCOL "Approvals"): the session's, read from its log, and
// the tenant's, in KV `fleet_config` (key `approval_rules`), with failures turned into FleetErrors.
import {
  type ApprovalRule,
  ApprovalRules,
  CONFIG_KEYS,
  decodeEvent,
  KV_BUCKETS,
  parseJson,
  TenantApprovalRules,
  validate,
} from "@fleet/protocol";
import { readSubject } from "@fleet/runtime";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { type ClientContext, eventStreamOf, eventSubjectOf, streamUnavailable } from "./client-context.js";
import { FleetError, isFleetError } from "./errors.js";
import { describeError } from "./nats-failures.js";
import { operatorKvWriteError } from "./tenant-limits.js";

/** The session's rules in force: its last `approval_rules_set` (empty: none). */
export async function sessionApprovalRulesOf(ctx: ClientContext, sessionId: string): Promise<ApprovalRule[]> {
  let rules: ApprovalRule[] = [];
  try {
    for await (const record of readSubject(
      ctx.js,
      ctx.jsm,
      eventStreamOf(ctx, sessionId),
      eventSubjectOf(ctx, sessionId),
    )) {
      const decoded = decodeEvent(record.data);
      if (decoded.ok && decoded.value.type === "approval_rules_set") rules = decoded.value.rules;
    }
  } catch (err) {
    if (isFleetError(err)) throw err;
    throw streamUnavailable(err);
  }
  return rules;
}

/** Checks rules as the loop will read them: `invalid_input` naming the first problem. */
export function checkedApprovalRules(rules: unknown): ApprovalRule[] {
  const parsed = validate(ApprovalRules, rules);
  if (!parsed.ok) throw new FleetError("invalid_input", "invalid", `approval rules: ${parsed.error}`);
  return parsed.value;
}

const WHAT = `the tenant's approval rules in KV ${KV_BUCKETS.config.name}`;

/** The tenant's rules (empty: none set); `unavailable`/`kv` when unreadable. */
export async function tenantApprovalRulesOf(nc: NatsConnection): Promise<ApprovalRule[]> {
  try {
    const kv = await new Kvm(nc).open(KV_BUCKETS.config.name);
    const entry = await kv.get(CONFIG_KEYS.approvalRules);
    if (entry?.operation !== "PUT" || entry.value.length === 0) return [];
    const json = parseJson(entry.value);
    const parsed = json.ok ? TenantApprovalRules.safeParse(json.value) : undefined;
    // The loop applies no rules of an invalid record; say so rather than show rules that do not apply.
    if (!parsed?.success) throw new FleetError("unavailable", "kv", `${WHAT} are invalid; none apply`);
    return parsed.data.rules;
  } catch (err) {
    if (isFleetError(err)) throw err;
    throw new FleetError("unavailable", "kv", `cannot read ${WHAT} (${describeError(err)})`, { cause: err });
  }
}

/**
 * Replaces the tenant's rules (an empty list removes them). Errors: `invalid_input`; `unavailable`
 * with code `permission` (only an operator or the gateway may write them), `storage_full` or `kv`.
 */
export async function setTenantApprovalRulesOf(nc: NatsConnection, rules: unknown): Promise<ApprovalRule[]> {
  const checked = checkedApprovalRules(rules);
  try {
    const kv = await new Kvm(nc).open(KV_BUCKETS.config.name);
    if (checked.length === 0) await kv.delete(CONFIG_KEYS.approvalRules);
    else await kv.put(CONFIG_KEYS.approvalRules, JSON.stringify({ rules: checked }));
    return checked;
  } catch (err) {
    throw operatorKvWriteError(WHAT, err);
  }
}
