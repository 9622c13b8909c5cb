import { DEFAULT_MAX_TOOL_RESULT_BYTES, type TraceSpan } from "@fleet/protocol";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { AnyToolDefinition } from "../define-tool.js";
import type { ProcessSandbox } from "../sandbox/process-sandbox.js";
import type { SandboxSettings } from "../sandbox/sandbox-settings.js";

export interface ToolRunnerOptions {
  nc: NatsConnection;
  tools: readonly AnyToolDefinition[];
  /**
   * The topology settings when this runner is the first service to start (`topologyFromEnv`: the
   * same FLEET_PARTITIONS, FLEET_LEASE_TTL_MS and FLEET_STREAM_REPLICAS as loop and store).
   */
  topology?: { partitions?: number; groups?: number; leaseTtlMs?: number; replicas?: number };
  /** `FLEET_WORKSPACE`: each session works in `<workspaceRoot>/<sessionId>` (created on demand). */
  workspaceRoot: string;
  /** `shared`: every session works in `workspaceRoot` itself. Default `per-session`. */
  workspaceMode?: "per-session" | "shared";
  /** Size quota of one workspace in bytes (FLEET_WORKSPACE_QUOTA_MB), for file tools and processes. Default 0: none. */
  workspaceQuotaBytes?: number;
  /**
   * How often the runner sweeps its workspace root for workspaces of deleted or archived sessions
   * (besides removing each at once when its lifecycle record arrives). Default 1 h.
   */
  workspaceSweepMs?: number;
  /** Unique per process. Default `tools-<host>-<pid>-<random>`. */
  runnerId?: string;
  logger?: Logger;
  /** `ack_wait` of the `tool-<name>` consumers (set on existing ones too). Default: the presence TTL. */
  ackWaitMs?: number;
  /** Calls of one tool running at once on this runner. Default 16. */
  concurrency?: number;
  /** Minimum interval between `update` records of one call. Default 100 ms. */
  updateIntervalMs?: number;
  /** After an abort, how long a tool may take to settle before its abort result is published. Default 1 s. */
  abortGraceMs?: number;
  /** A call whose `started` record belongs to another live runner is looked at again after this delay. Default 1 s. */
  busyRetryMs?: number;
  /** FLEET_MAX_TOOL_RESULT_BYTES: larger final records are truncated and stored whole in `fleet_blobs` (default and maximum 1 MiB - 16 KiB). */
  maxRecordBytes?: number;
  /** FLEET_MAX_TOOL_ARGS_BYTES: calls with larger `args` (as JSON) get an error result naming the limit. Default 512 KiB. */
  maxArgsBytes?: number;
  /**
   * How tools start processes: settings probed once at `start()` (default: bubblewrap with the
   * default limits), or an already opened sandbox.
   */
  sandbox?: SandboxSettings | ProcessSandbox;
  /** Prometheus registry for the runner's metrics. */
  metrics?: Registry;
  now?: () => number;
  /**
   * Receives the runner's span of each call it ran whose request carried trace context (change 46;
   * `runnerToolSpan`), e.g. an OTLP exporter. Contract: must not throw.
   */
  onCallSpan?: (span: TraceSpan) => void;
}

export type StartOutcome = { ok: true } | { ok: false; error: string };

export interface ToolRunner {
  readonly runnerId: string;
  /**
   * Creates the topology if needed, announces presence, registers the tools and starts pulling.
   * Resolves `ok: false` (nothing pulled, presence removed) when a tool conflicts with a live
   * registration; rejects on NATS errors.
   */
  start(): Promise<StartOutcome>;
  /**
   * Stops pulling, lets running calls finish for `graceMs` (default 10 s), then aborts the rest:
   * `retry: "safe"` calls are handed back to the queue (nak) for another runner, `retry: "never"`
   * calls get the runner-lost error result. Finally removes the runner's presence. Idempotent.
   */
  stop(opts?: { graceMs?: number }): Promise<void>;
  /**
   * Serves `tools` from now on, after `start` (MCP servers' tools come and go): new or changed
   * tools are registered (as at start) and pulled, presence lists them, tools no longer given stop
   * being pulled (calls running finish). A tool whose registration conflicts with a live runner is
   * left out and named in the error; the others are served. Calls are serialised. Rejects on NATS errors.
   */
  setTools(tools: readonly AnyToolDefinition[]): Promise<StartOutcome>;
  /** The tools served now. */
  tools(): readonly AnyToolDefinition[];
  activeCalls(): number;
  isReady(): boolean;
}

/** The options that have defaults, with them applied (`maxRecordBytes` capped at the protocol's maximum). */
export function runnerSettings(opts: ToolRunnerOptions) {
  return {
    workspaceMode: opts.workspaceMode ?? "per-session",
    concurrency: opts.concurrency ?? 16,
    updateIntervalMs: opts.updateIntervalMs ?? 100,
    abortGraceMs: opts.abortGraceMs ?? 1_000,
    busyRetryMs: opts.busyRetryMs ?? 1_000,
    maxRecordBytes: Math.min(opts.maxRecordBytes ?? DEFAULT_MAX_TOOL_RESULT_BYTES, DEFAULT_MAX_TOOL_RESULT_BYTES),
    maxArgsBytes: opts.maxArgsBytes,
  } as const;
}
