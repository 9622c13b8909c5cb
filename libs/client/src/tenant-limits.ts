// The SDK's calls on the tenant's daily budget, with KV failures turned into FleetErrors.
import { BudgetLimits, KV_BUCKETS, validate } from "@fleet/protocol";
import { isStorageFullError } from "@fleet/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import { FleetError, storageFullError } from "./errors.js";
import { describeError, isPermissionDenied } from "./nats-failures.js";
import { readTenantBudget, type TenantBudgetReport, writeTenantLimits } from "./tenant-budget.js";

/** The tenant's limits and spend on `day` (default today, UTC); `unavailable`/`kv` when unreadable. */
export async function tenantBudgetOf(nc: NatsConnection, day?: string): Promise<TenantBudgetReport> {
  try {
    return await readTenantBudget(nc, day);
  } catch (err) {
    throw new FleetError("unavailable", "kv", `cannot read KV ${KV_BUCKETS.budgets.name} (${describeError(err)})`, {
      cause: err,
    });
  }
}

/**
 * Writes (or, with `null`, removes) the tenant's daily limits, checked strictly: an unknown field is
 * `invalid_input`. Errors: `unavailable` with code `permission` (only an operator may write them),
 * `storage_full` or `kv`.
 */
export async function setTenantLimitsOf(nc: NatsConnection, limits: BudgetLimits | null): Promise<void> {
  let checked: BudgetLimits | null = null;
  if (limits !== null) {
    const parsed = validate(BudgetLimits.strict(), limits);
    if (!parsed.ok) throw new FleetError("invalid_input", "invalid", `budget limits: ${parsed.error}`);
    checked = parsed.value;
  }
  try {
    await writeTenantLimits(nc, checked);
  } catch (err) {
    throw operatorKvWriteError(`the tenant's daily budget in KV ${KV_BUCKETS.budgets.name}`, err);
  }
}

/**
 * The FleetError of a failed write of a tenant record only an operator may write: `storage_full`,
 * `unavailable` with code `permission`, or `unavailable`/`kv`.
 */
export function operatorKvWriteError(what: string, err: unknown): FleetError {
  if (isStorageFullError(err)) return storageFullError(`write ${what}`, err);
  if (isPermissionDenied(err)) {
    return new FleetError(
      "unavailable",
      "permission",
      `not allowed to set ${what} (an operator may): ${describeError(err)}`,
    );
  }
  return new FleetError("unavailable", "kv", `cannot write ${what} (${describeError(err)})`, { cause: err });
}
