// What a session actor is given: its worker's settings and ports (NATS, tool runners, stores, hooks).

import type { ApprovalRule, ModelRef, SessionConfig } from "@fleet/protocol";
import type { AgentStore, BlobAccess, Logger, StreamPublisher } from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { EngineHooks, StreamFn } from "../engine/index.js";
import type { HookServers } from "../hook-servers.js";
import type { RemoteHookClient } from "../hooks.js";
import type { LifecycleDeps } from "../lifecycle/lifecycle-deps.js";
import type { LoopMetrics } from "../metrics.js";
import type { OpenWorkIndex } from "../open-work/open-work-index.js";
import type { ModelInfo } from "../providers/models.js";
import type { RunTraceSink } from "../run-trace-sink.js";
import type { SnapshotSettings } from "../snapshots/session-load.js";
import type { SubAgentPort } from "../sub-agents/sub-agent-port.js";
import type { TenantBudgetView } from "../tenant-budget-view.js";
import type { ToolDispatcher } from "../tool-dispatcher.js";
import type { ToolRegistry } from "../tool-registry.js";

export interface ActorSettings {
  coalesceMs: number;
  coalesceDeltas: number;
  hookTimeoutMs: number;
  /** How long "no responders" on a remote hook subject is trusted before asking again (0: never). */
  hookRecheckMs?: number;
  /** Named hook servers, in the order they are asked (change 53); empty or absent: none. */
  hookServers?: readonly string[];
  toolTimeoutMs: number;
  /** Config of a session created without one (PROTOCOL "Defaults"). */
  defaults: SessionConfig;
  /** Tools whose calls wait for `approve_tool_call` / `deny_tool_call`. */
  approvalTools: ReadonlySet<string>;
  /** Largest command decoded (`FLEET_MAX_COMMAND_BYTES`; default the protocol's). */
  maxCommandBytes?: number;
  /** Largest command body by reference read (`FLEET_MAX_INPUT_BYTES`; default the protocol's). */
  maxInputBytes?: number;
  /**
   * Whether each appended event is checked against the `FleetEvent` schema before it is written
   * (`FLEET_VALIDATE_APPENDS`; default true here, false in the service). Off, it is serialised as
   * built (`encodeBuiltEvent`), with the same size limit.
   */
  validateAppends?: boolean;
  /**
   * How long a session must stay with nothing open before its open-work entry is removed (default
   * `OPEN_WORK_LINGER_MS`): a session prompted again meanwhile neither removes nor rewrites it.
   */
  openWorkLingerMs?: number;
}

/** Default `openWorkLingerMs`: a follow-up within a second of a run's end keeps the session's entry. */
export const OPEN_WORK_LINGER_MS = 1_000;

export interface ActorDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  /** Appends events (acks matched on one inbox; see @fleet/runtime createStreamPublisher). */
  publisher: StreamPublisher;
  jsm: JetStreamManager;
  sessionId: string;
  partition: number;
  /** P, from `fleet_config.partitions`. */
  partitions: number;
  /** K, from `fleet_config.stream_groups` (default 1): names the event streams. */
  groups?: number;
  workerId: string;
  epoch: number;
  /** The partition lease's write fence (see SessionAppender `writeGate`). */
  writeGate?: () => boolean | Promise<boolean>;
  now: () => number;
  newId: () => string;
  /** LLM port per provider name (`anthropic`, `scripted`, pi-ai's providers). */
  providers: Readonly<Record<string, StreamFn>>;
  /** Context window and prices of a model (`ModelCatalog.info`); default Fleet's Anthropic table. */
  modelInfo?: (model: ModelRef) => ModelInfo;
  dispatcher: ToolDispatcher;
  registry: ToolRegistry;
  pluginHooks: readonly EngineHooks[];
  /** `fleet.hook.before_tool_call` / `after_tool_call`, shared by the worker's sessions. */
  remoteHooks: RemoteHookClient;
  /** Named hook servers (`FLEET_HOOK_SERVERS`, change 53); absent: none, and no cost. */
  hookServers?: HookServers;
  /** The tenant's daily limits and spend (KV `fleet_budgets`, `fleet_spend_totals`); absent: no tenant budget. */
  tenantBudget?: TenantBudgetView;
  /** The tenant's agents (KV `fleet_agents`); absent: a command naming an agent finds none. */
  agents?: AgentStore;
  /** The tenant's approval rules (KV `fleet_config` `approval_rules`); absent: none. */
  tenantApprovalRules?: { rules(): readonly ApprovalRule[] };
  /** The object stores: command inputs by reference, and content by reference for the LLM. */
  blobs: BlobAccess;
  settings: ActorSettings;
  logger: Logger;
  metrics: LoopMetrics;
  /** The writer was fenced (10071) or a write failed: the worker must drop this actor. */
  onDead: (sessionId: string, why: string) => void;
  /** Deletions, archives and restores; absent: the lifecycle commands are decided but not carried out. */
  lifecycle?: LifecycleDeps;
  /** The session was deleted: the worker forgets this actor (the next command loads the empty log). */
  onRemoved?: (sessionId: string) => void;
  /** Snapshots of session folds (PROTOCOL change 42); absent: every load folds the whole log. */
  snapshots?: SnapshotSettings;
  /** Receives the session's log as loaded and each appended event (the span exporter); absent: none. */
  traces?: RunTraceSink;
  /** The partition's open-work index (change 41); absent: not kept (tests of the actor alone). */
  openWork?: OpenWorkIndex;
  /** Sub-agents (change 57): the `agent` tool and a child's reports to its parent; absent: no `agent` tool. */
  subAgents?: SubAgentPort;
}
