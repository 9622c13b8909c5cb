// The day totals kept in KV `fleet_spend` before they had a bucket of their own (PROTOCOL change 60).
import { KV_BUCKETS, SPEND_KEYS } from "@fleet/protocol";
import { type Logger, readKvEntries } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";

/**
 * Moves the `total.<day>.<p>` keys of `fleet_spend` into `fleet_spend_totals`, once per deployment:
 * unless key `migrated` of `fleet_spend_totals` is there, reads them (a scan of `fleet_spend`, the
 * only one), creates each one `fleet_spend_totals` lacks, purges them from `fleet_spend`, then writes
 * `migrated`. Each start writes `migrated` again, so it does not age out while workers run (and a
 * deployment idle for two days has no totals left to move). Never throws (logs a failure: the
 * tenant's day spend then lacks what the old totals counted).
 */
export async function migrateSpendTotals(spend: KV, totals: KV, jsm: JetStreamManager, log: Logger): Promise<void> {
  try {
    if ((await totals.get(SPEND_KEYS.migrated))?.operation !== "PUT") {
      let moved = 0;
      for (const entry of await readKvEntries(spend, SPEND_KEYS.totalsAll)) {
        try {
          await totals.create(entry.key, entry.value);
          moved++;
        } catch (err) {
          // Counted here already (a worker of this version): that total is the newer one.
          if (!/exists|wrong last sequence/i.test((err as Error).message)) throw err;
        }
      }
      const bucket = KV_BUCKETS.spend.name;
      await jsm.streams.purge(`KV_${bucket}`, { filter: `$KV.${bucket}.${SPEND_KEYS.totalsAll}` });
      log.info({ evt: "spend_totals_moved", totals: moved }, "moved the day totals into their own bucket");
    }
    await totals.put(SPEND_KEYS.migrated, new Date().toISOString());
  } catch (err) {
    log.warn({ evt: "spend_totals_move_failed", error: String(err) }, "could not move the old day totals");
  }
}
