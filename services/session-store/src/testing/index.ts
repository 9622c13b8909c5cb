// Test entry of @fleet/session-store (`@fleet/session-store/testing`, sources only, not built): the
// store's parts that integration tests drive one by one, and synthetic session logs.

export { createAppliedAnnouncer } from "../applied-notices.js";
export { deleteLegacyPartitionConsumers, prepareStoreConsumer, storeConsumerDrift } from "../consumer-control.js";
export { ackReplyOf, pendingOf, prevSeqOf, streamSeqOf, toEventRecord } from "../delivered-message.js";
export { startGroupWorker } from "../group-worker.js";
export {
  ALL_SHARDS,
  INDEX_VERSION,
  indexKeys,
  indexKeysOf,
  indexVersionKey,
  STORE_SHARDS,
  sessionKeys,
  sessionKeysPattern,
  shardOf,
} from "../keys.js";
export { createNamespaceControl, newNamespaceId } from "../namespace.js";
export { createProjector, type EventRecord, type PreparedBatch, type Projector } from "../projector.js";
export { handleQuery, type QueryContext } from "../queries.js";
export { connectRedis, parseRedisTarget } from "../redis-client.js";
export { streamGapReader } from "../replay.js";
export { createSessionCache } from "../session-cache.js";
export { createSessionRepo } from "../session-repo.js";
export { createSlots } from "../slots.js";
export { snapshotSession } from "../verify.js";
export {
  prng,
  SYNTHETIC_CONFIG,
  type SyntheticOptions,
  syntheticEvents,
  syntheticSession,
} from "./synthetic-session.js";
