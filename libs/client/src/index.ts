// Public surface of @fleet/client: the TypeScript SDK for driving and reading Fleet sessions.

export {
  type DeploymentReport,
  inspectDeployment,
  type LeaseReport,
  type StorageReport,
  type StreamReport,
  type ToolReport,
} from "./cli/inspect-deployment.js";
export { CommandRejectedError, FleetError, type FleetErrorKind, isFleetError, StoreQueryError } from "./errors.js";
export {
  type CommandBody,
  type CommandOptions,
  type CommandOutcome,
  type CreateSessionOptions,
  type EventsOptions,
  FleetClient,
  type FleetClientOptions,
  type ImportInput,
  type LifecycleOptions,
  type OutcomeRecord,
  type ReplayResult,
  type SessionEventItem,
  type SessionEventRecord,
} from "./fleet-client.js";
export { newId, newSessionId } from "./ids.js";
export { LiveSession, type SessionChangeListener } from "./live-session.js";
export type { MessageInput } from "./message-input.js";
export { emptySessionView, foldSessionView, foldSessionViewEvents, type SessionView } from "./session-view.js";
export type { StoreResult } from "./store-request.js";
export { sessionsBySpend, type TenantBudgetReport } from "./tenant-budget.js";
