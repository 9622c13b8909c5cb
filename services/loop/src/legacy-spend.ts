// The per-session spend records of `fleet_budgets` from before the day totals (PROTOCOL change 43).
import { BUDGET_KEYS, KV_BUCKETS } from "@fleet/protocol";
import type { Logger } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";

/**
 * Purges every `spend.<day>.<sessionId>` key of `fleet_budgets` in one request: nothing reads them
 * since the day's spend is in `fleet_spend`, and they never expired. Never throws (logs a failure).
 */
export async function purgeLegacySpend(jsm: JetStreamManager, log: Logger): Promise<void> {
  const bucket = KV_BUCKETS.budgets.name;
  try {
    const purged = await jsm.streams.purge(`KV_${bucket}`, { filter: `$KV.${bucket}.${BUDGET_KEYS.legacySpend}` });
    if (purged.purged > 0) {
      log.info(
        { evt: "legacy_spend_purged", messages: purged.purged },
        "removed the spend records from before the day totals",
      );
    }
  } catch (err) {
    log.warn({ evt: "legacy_spend_purge_failed", error: String(err) }, "could not remove the old spend records");
  }
}
