import type { Logger, StreamPublisher } from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { ObjectStore } from "@nats-io/obj";
import type { LoopMetrics } from "../metrics.js";
import type { SnapshotStore } from "../snapshots/snapshot-store.js";
import type { ArchiveStore } from "./archive-store.js";
import type { HaltPoint } from "./halt-point.js";
import type { SpendLedger } from "./spend-ledger.js";

/** What a worker's lifecycle operations (deletion, archive, restore) use, shared by its sessions. */
export interface LifecycleDeps {
  js: JetStreamClient;
  jsm: JetStreamManager;
  publisher: StreamPublisher;
  ledger: SpendLedger;
  archive: ArchiveStore;
  /** Object store `fleet_blobs`. */
  blobs: ObjectStore;
  /** KV `fleet_snapshots` (change 42): a deleted session's snapshot is removed with its events. */
  snapshots?: SnapshotStore;
  workerId: string;
  /** K, to name the event streams (default 1: `FLEET_EVENTS`). */
  groups?: number;
  now: () => number;
  halt: HaltPoint;
  logger: Logger;
  metrics: LoopMetrics;
  /**
   * How long a deletion waits for the session store's consumer of the partition to exist before it
   * concludes that no store is deployed (default 30 s).
   */
  storeAbsentMs?: number;
}
