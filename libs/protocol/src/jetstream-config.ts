/**
 * Stream, consumer, KV and object-store configurations as plain data (nats.js field names and enum
 * values). `applyTopology` in `@fleet/runtime` creates or verifies them; this module does no I/O.
 * Durations are nanoseconds, as on the wire.
 */
const NS_PER_MS = 1_000_000;
export const ms = (n: number) => n * NS_PER_MS;

export const STREAMS = {
  events: {
    name: "FLEET_EVENTS",
    subjects: ["fleet.evt.>"],
    retention: "limits",
    storage: "file",
    max_age: 0,
    deny_delete: true,
    allow_direct: true,
    duplicate_window: ms(120_000),
    max_msg_size: 1024 * 1024,
    /**
     * The live path (change 67): every stored event is also published, whole (body and headers,
     * plus `Nats-Stream`, `Nats-Subject`, `Nats-Sequence` and `Nats-Last-Sequence`, the subject's
     * previous sequence), on `fleet.live.<p>.<sessionId>`. nats-server 2.9 sets this only when the
     * stream is created: a stream made before change 67 has none, and readers then fall back to the
     * doorbell path (change 58).
     */
    republish: { src: "fleet.evt.>", dest: "fleet.live.>" },
  },
  commands: {
    name: "FLEET_COMMANDS",
    subjects: ["fleet.cmd.>"],
    retention: "workqueue",
    storage: "file",
    allow_direct: false,
    duplicate_window: ms(120_000),
    max_msg_size: 1024 * 1024,
  },
  toolCalls: {
    name: "FLEET_TOOL_CALLS",
    subjects: ["fleet.tool.call.>"],
    retention: "workqueue",
    storage: "file",
    allow_direct: false,
    duplicate_window: ms(3_600_000),
    max_msg_size: 1024 * 1024,
  },
  toolResults: {
    name: "FLEET_TOOL_RESULTS",
    subjects: ["fleet.tool.result.>"],
    retention: "limits",
    storage: "file",
    allow_direct: true,
    max_age: ms(24 * 3_600_000),
    duplicate_window: ms(120_000),
    max_msg_size: 1024 * 1024,
  },
  /**
   * The open-work index (PROTOCOL change 41): per partition, one message per session with open work
   * (`fleet.openwork.<p>.<sessionId>`), written by the partition's holder before the work opens and
   * purged once it is closed; and `fleet.openwork.<p>`, written once the partition's log was scanned
   * in full (sessions from before the index). Holds only what is open, so reading a partition's
   * entries costs in proportion to its open work.
   */
  openWork: {
    name: "FLEET_OPEN_WORK",
    subjects: ["fleet.openwork.>"],
    retention: "limits",
    storage: "file",
    max_msgs_per_subject: 1,
    allow_direct: true,
    duplicate_window: ms(120_000),
    max_msg_size: 4 * 1024,
  },
  /**
   * Schedules (change 55): one subject per schedule, `fleet.sched.<scheduleId>`, holding its
   * definition, pause/resume/trigger and every slot's outcome. Written with the expected last subject
   * sequence (one writer at a time); a deleted schedule's subject is purged.
   */
  schedules: {
    name: "FLEET_SCHEDULES",
    subjects: ["fleet.sched.>"],
    retention: "limits",
    storage: "file",
    max_age: 0,
    allow_direct: true,
    duplicate_window: ms(120_000),
    max_msg_size: 1024 * 1024,
  },
} as const;
export type StreamKey = keyof typeof STREAMS;
export type StreamSpec = (typeof STREAMS)[StreamKey];

/** Durable consumer of partition `p` on FLEET_COMMANDS. One filter subject (2.9). */
/**
 * Durable consumer of one partition's commands. `ackWaitMs` is the partition lease's TTL: a command
 * pulled by a worker that died is redelivered to the next owner about when the lease has moved; a
 * live worker marks every command it holds as in progress well within it.
 */
export const loopCommandConsumer = (partition: number, ackWaitMs = 5_000) => ({
  durable_name: `loop-p${partition}`,
  filter_subject: `fleet.cmd.${partition}.*`,
  ack_policy: "explicit",
  deliver_policy: "all",
  ack_wait: ms(ackWaitMs),
  max_ack_pending: 1000,
  max_deliver: -1,
});

/** Durable consumer shared by every runner of one tool. */
export const toolCallConsumer = (toolName: string, ackWaitMs = 30_000) => ({
  durable_name: `tool-${toolName}`,
  filter_subject: `fleet.tool.call.${toolName}`,
  ack_policy: "explicit",
  deliver_policy: "all",
  ack_wait: ms(ackWaitMs),
  max_ack_pending: 1000,
  max_deliver: -1,
});

/**
 * The durable consumer that delivers one webhook: `webhook-<id>` on an event stream, filtered on one
 * session's subject or on every event (`fleet.evt.>`), or unfiltered (`filterSubject` null: a webhook
 * for every session on each group's stream of a log of K > 1 groups), starting at the stream
 * sequence after the registration.
 * One message in flight, so deliveries of a webhook keep stream order. A gateway marks the message in
 * progress every 5 s while it POSTs, so `ack_wait` is only how soon another gateway redelivers the
 * message of one that died mid-delivery.
 */
export const webhookConsumer = (webhookId: string, filterSubject: string | null, startSeq: number) => ({
  durable_name: `webhook-${webhookId}`,
  ...(filterSubject === null ? {} : { filter_subject: filterSubject }),
  ack_policy: "explicit",
  deliver_policy: "by_start_sequence",
  opt_start_seq: startSeq,
  ack_wait: ms(15_000),
  max_ack_pending: 1,
  max_deliver: -1,
});

export const DEFAULT_LEASE_TTL_MS = 5_000;

export const KV_BUCKETS = {
  config: { name: "fleet_config", history: 1, ttlMs: 0 },
  leases: { name: "fleet_leases", history: 1, ttlMs: DEFAULT_LEASE_TTL_MS },
  tools: { name: "fleet_tools", history: 5, ttlMs: 0 },
  /** Webhook registrations of the HTTP gateway (created by the gateway). */
  webhooks: { name: "fleet_webhooks", history: 1, ttlMs: 0 },
  /** Tenant budget: `limits`, and the ledger of deleted sessions' spend per UTC day (`BUDGET_KEYS`). */
  budgets: { name: "fleet_budgets", history: 1, ttlMs: 0 },
  /** The tenant's spend per UTC day: sessions' records (`SPEND_KEYS.session`); keys age out. */
  spend: { name: "fleet_spend", history: 1, ttlMs: 2 * 86_400_000 },
  /**
   * The tenant's spend per UTC day: partitions' totals (`SPEND_KEYS.total`) and the `migrated` mark
   * (change 60), apart from the sessions' records so that reading every total costs P keys per day,
   * never one per session; keys age out.
   */
  spendTotals: { name: "fleet_spend_totals", history: 1, ttlMs: 2 * 86_400_000 },
  /**
   * The loop's snapshots of session folds (change 42): `<sessionId>` → header line and the body's
   * first part, `<sessionId>.<k>` → part k. Derived data: losing any of it costs a full load only.
   */
  snapshots: { name: "fleet_snapshots", history: 1, ttlMs: 0 },
  /**
   * Agents (change 54): `<name>.v<N>` → `AgentVersion` (written with create, never replaced) and
   * `<name>.latest` → `AgentLatest` (moved forward by compare-and-set).
   */
  agents: { name: "fleet_agents", history: 1, ttlMs: 0 },
} as const;

export const OBJECT_STORES = {
  /** Payloads too large for a message that the log refers to: tool output, accepted input parts. */
  blobs: { name: "fleet_blobs" },
  /** Archived sessions (`archive_session`), unless the loop writes them to `FLEET_ARCHIVE_DIR`. */
  archive: { name: "fleet_archive" },
  /**
   * A command's parts and body when they are too large to go inline, written before the command is
   * published. Objects age out after `ttlMs` (the stream's max age), so those of a command that was
   * never accepted do not stay; the loop copies an accepted command's parts to `fleet_blobs`.
   */
  inputs: { name: "fleet_inputs", ttlMs: 24 * 60 * 60 * 1000 },
} as const;

/**
 * Keys of KV `fleet_config`. `probe` is written (a timestamp, replacing the last) by a health report
 * to learn whether JetStream still takes writes: a full store refuses it (`fleet doctor`).
 */
export const CONFIG_KEYS = {
  partitions: "partitions",
  /** K, the number of event streams (change 56); absent on a log made before groups, which has K = 1. */
  streamGroups: "stream_groups",
  protocol: "protocol",
  probe: "probe",
  /** The tenant's approval rules (`TenantApprovalRules` JSON), written by operators and the gateway. */
  approvalRules: "approval_rules",
} as const;
export const PROTOCOL_VERSION = 1;

export const leaseKey = (role: "loop" | "store", partition: number) => `${role}.p.${partition}`;

/** Oldest nats-server this protocol runs on; newer features are gated by version. */
export const MIN_NATS_SERVER = "2.9.0";
