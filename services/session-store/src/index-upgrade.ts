import type { Logger } from "@fleet/runtime";
import { INDEX_VERSION, indexVersionKey } from "./keys.js";
import type { NamespaceControl } from "./namespace.js";
import { RebuildLockedError, type ReplayDeps, rebuild } from "./rebuild.js";

/**
 * A namespace built before the indexes of PROTOCOL change 44 (or with another layout) has no
 * `<ns>:indexes` marker: its sessions are in no index. Rebuilds it once, in the background, the
 * usual way (queries keep reading the old namespace until the switch). Resolves with what it did;
 * never throws (another instance holding the rebuild lock does the same work).
 */
export async function upgradeIndexes(
  deps: ReplayDeps,
  namespaces: NamespaceControl,
  logger: Logger,
): Promise<"current" | "none" | "rebuilt" | "locked" | "failed"> {
  try {
    const active = await namespaces.peek();
    if (!active) return "none";
    const version = await deps.redis.get(indexVersionKey(deps.prefix, active.ns));
    if (version === INDEX_VERSION) return "current";
    logger.info(
      { evt: "store_index_upgrade_started", ns: active.ns, version, wanted: INDEX_VERSION },
      "the active namespace has no session indexes of this version: rebuilding it",
    );
    const result = await rebuild(deps);
    logger.info(
      { evt: "store_index_upgrade_done", ns: result.ns, oldNs: result.oldNs, events: result.events },
      "rebuilt with the session indexes",
    );
    return "rebuilt";
  } catch (err) {
    if (err instanceof RebuildLockedError) return "locked";
    logger.warn({ evt: "store_index_upgrade_failed", err }, "could not rebuild with the session indexes");
    return "failed";
  }
}
