// Public surface of @fleet/client: the TypeScript SDK for driving and reading Fleet sessions.

export { type AgentDefinition, type AgentDetails, AgentsApi } from "./agents.js";
export {
  addChange,
  batchOf,
  type ChangeBatch,
  type ChangeFeed,
  type ChangeFeedLogger,
  type ChangeListener,
  changeOf,
  createChangeFeed,
  type FeedEnds,
  MAX_FRAME_SESSIONS,
  noChanges,
  type PendingChanges,
} from "./change-feed.js";
export {
  type DeploymentReport,
  inspectDeployment,
  type LeaseReport,
  type StorageReport,
  type StreamReport,
  type ToolReport,
} from "./cli/inspect-deployment.js";
export type { FleetClientOptions } from "./client-connect.js";
export type {
  CommandBody,
  CommandOptions,
  CommandOutcome,
  CreateSessionOptions,
  ImportInput,
  LifecycleOptions,
  OutcomeRecord,
} from "./command-options.js";
export { CommandRejectedError, FleetError, type FleetErrorKind, isFleetError, StoreQueryError } from "./errors.js";
export { DEFAULT_CHANGE_WINDOW_MS, FleetClient } from "./fleet-client.js";
export type { HistoryRange, HistoryRecord } from "./history-read.js";
export { newId, newSessionId } from "./ids.js";
export { LiveSession, type SessionChangeListener } from "./live-session.js";
export type { MessageInput } from "./message-input.js";
export type { EventsOptions, ReplayResult, SessionEventItem, SessionEventRecord } from "./read-options.js";
export {
  type ScheduleCallOptions,
  ScheduleClient,
  type ScheduleHistoryItem,
  type ScheduleView,
} from "./schedules.js";
export { approvalsWithDescendants, descendantIds, type SessionChild, sessionChildren } from "./session-children.js";
export { diffSessionLogs, type ReplayProgress, type ReplayRow, replayProgressOf } from "./session-replay.js";
export { emptySessionView, foldSessionView, foldSessionViewEvents, type SessionView } from "./session-view.js";
export type { StoreResult } from "./store-request.js";
export { sessionsBySpend, type TenantBudgetReport } from "./tenant-budget.js";
