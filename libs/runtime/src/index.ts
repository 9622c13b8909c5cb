// Public surface of @fleet/runtime: the I/O adapters every Fleet service shares.

export {
  type AgentStore,
  AgentStoreError,
  type AgentSummary,
  type AgentVersionInput,
  createAgentStore,
} from "./agent-store.js";
export { ensureAuditMirror } from "./audit-feed.js";
export { type BlobAccess, createBlobAccess, resolveBlobBlocks, type StoredObject } from "./blob-access.js";
export { type CommandCopy, commandCopyState } from "./command-copy.js";
export {
  envBool,
  envInt,
  envLogLevel,
  envOptionalInt,
  envString,
  loadEnvOrExit,
  natsServiceEnvFields,
  parseEnv,
  serviceEnvFields,
  topologyEnvFields,
  topologyFromEnv,
} from "./env-config.js";
export { newId } from "./ids.js";
export { readKvEntries } from "./kv-entries.js";
export { type FollowKvOptions, followKv, type KvFollower } from "./kv-follow.js";
export { createLogger, type Logger } from "./logger.js";
export {
  buildNatsAuth,
  describeNatsAuth,
  NATS_AUTH_ENV,
  type NatsAuth,
  type NatsAuthSettings,
  natsAuthEnvFields,
  natsAuthFromEnv,
  redactUrl,
} from "./nats-auth.js";
export {
  type ConnectOptions,
  checkServer,
  checkServerAtStartup,
  connectFleet,
  connectNats,
  describeConnectError,
  type FleetConnectOptions,
  NatsConnectError,
  type ServerCapabilities,
  STARTUP_JETSTREAM_WAIT_MS,
  watchPermissionErrors,
} from "./nats-connection.js";
export {
  createOperatorDeployment,
  OPERATOR_MODE_ROLES,
  type OperatorDeployment,
  writeCredsFiles,
} from "./operator-deployment.js";
export { type OpsServer, startOpsServer } from "./ops-server.js";
export {
  createOtlpSpanExporter,
  FLEET_TRACE_SCOPE,
  isOtlpTraceExportConfigured,
  type OtlpSpanExporter,
  type SpanExportOutcome,
  toReadableSpan,
} from "./otlp-span-export.js";
export {
  createLeaseManager,
  type HeldLease,
  isWrongLastSequence,
  type LeaseManager,
  type LeaseManagerOptions,
  LeaseValue,
  type ReleaseReason,
} from "./partition-leases.js";
export {
  isStorageFullError,
  isTransientPublishFailure,
  type PublishFailureCause,
  publishFailureCause,
} from "./publish-failure.js";
export {
  appendScheduleEvent,
  listScheduleIds,
  purgeScheduleLog,
  readScheduleLog,
  type ScheduleRecord,
} from "./schedule-log.js";
export { atLeast, compareVersions } from "./semver.js";
export { sleep } from "./sleep.js";
export {
  createStreamPublisher,
  type DurablePublishOptions,
  NO_STREAM,
  PUBLISH_FAILED,
  PUBLISH_TIMEOUT,
  type PublishAck,
  type PublishFailure,
  type PublishOptions,
  type StreamPublisher,
  WRONG_LAST_SEQUENCE,
} from "./stream-publisher.js";
export { lastSubjectSeq, readSubject, type StoredRecord, walkBackSubject } from "./subject-reader.js";
export {
  type ApplyTopologyOptions,
  applyTopology,
  diffConfig,
  ensureConsumer,
  type Topology,
  TopologyChangeError,
} from "./topology.js";
