// Public surface of @fleet/runtime: the I/O adapters every Fleet service shares.
export { compareVersions, atLeast } from "./semver.js";
export { connectNats, checkServer, type ConnectOptions, type ServerCapabilities } from "./nats-connection.js";
export {
  applyTopology,
  ensureConsumer,
  diffConfig,
  type Topology,
  type ApplyTopologyOptions,
} from "./topology.js";
export {
  createLeaseManager,
  LeaseValue,
  type LeaseManager,
  type LeaseManagerOptions,
  type HeldLease,
  type ReleaseReason,
} from "./partition-leases.js";
export { createLogger, type Logger } from "./logger.js";
export { parseEnv, envInt, envString, envBool, loadEnvOrExit } from "./env-config.js";
export { startOpsServer, type OpsServer } from "./ops-server.js";
export { lastSubjectSeq, readSubject, type StoredRecord } from "./subject-reader.js";
