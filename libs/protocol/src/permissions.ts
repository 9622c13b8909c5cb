// Each role's NATS subject permissions, derived from the subject table and the JetStream configs.
import {
  CONFIG_KEYS,
  KV_BUCKETS,
  loopCommandConsumer,
  OBJECT_STORES,
  STREAMS,
  toolCallConsumer,
} from "./jetstream-config.js";
import { eventStreamName, eventStreamNames, lifecycleStreamName, storeGroupConsumer } from "./stream-groups.js";
import { STORE_QUEUE_GROUP, subjects } from "./subjects.js";
import { RUNNER_PRESENCE_KEYS } from "./tool-records.js";

/**
 * Who connects to a tenant's account:
 * - `loop`, `tools`, `store`: the services;
 * - `hooks`: a remote hook service (answers `fleet.hook.<hook>` and `fleet.hook.<hook>.<server>` requests of the loop, nothing else);
 * - `reader`: a read-only client (watch, replay, store queries, `fleet doctor`);
 * - `operator`: a reader that may also send commands;
 * - `gateway`: the HTTP gateway serving the tenant (an operator's reads and commands, the budget's
 *   limits, and the tenant's webhooks: KV `fleet_webhooks` and their durable consumers);
 * - `auditor`: a reader of an audit account's mirror of a tenant's events (see `auditMirrorStream`);
 * - `audit-admin`: creates that mirror once, and nothing else.
 */
export const FLEET_ROLES = [
  "loop",
  "tools",
  "store",
  "hooks",
  "reader",
  "operator",
  "gateway",
  "auditor",
  "audit-admin",
] as const;
export type FleetRole = (typeof FLEET_ROLES)[number];

/** Allow and deny lists of one direction; a deny wins over an allow (nats-server semantics). */
export interface SubjectRules {
  allow: string[];
  deny: string[];
}

/** A NATS user's permissions. `allowResponses`: may reply once to the reply subject of a request it received. */
export interface RolePermissions {
  publish: SubjectRules;
  subscribe: SubjectRules;
  allowResponses: boolean;
}

/**
 * The inbox prefix a role's connections use for every reply (requests, JetStream acks, pulls, KV
 * watches). A service role may subscribe to its own prefix only, so it never sees another role's
 * replies (a tool call pulled by a runner arrives on the runner's inbox, a webhook's event on the
 * gateway's). Clients share one prefix: a reader may see an operator's replies, which hold nothing a
 * reader cannot read itself.
 */
export const inboxPrefixOf = (role: FleetRole) =>
  role === "loop" || role === "tools" || role === "store" || role === "hooks" || role === "gateway"
    ? `_INBOX_${role}`
    : CLIENT_INBOX_PREFIX;
export const CLIENT_INBOX_PREFIX = "_INBOX_client";

const API = "$JS.API";
const kvStream = (bucket: string) => `KV_${bucket}`;
const objStream = (store: string) => `OBJ_${store}`;

/**
 * Every stream of a tenant's account with K stream groups: the event streams, Fleet's other streams,
 * and the ones behind the KV buckets and the object store.
 */
export const tenantStreams = (groups = 1): readonly string[] => [
  ...eventStreamNames(groups),
  ...Object.values(STREAMS)
    .filter((s) => s.name !== STREAMS.events.name)
    .map((s) => s.name),
  ...Object.values(KV_BUCKETS).map((b) => kvStream(b.name)),
  ...Object.values(OBJECT_STORES).map((o) => objStream(o.name)),
];
/** The streams of a tenant whose log is one stream group (K = 1). */
export const TENANT_STREAMS: readonly string[] = tenantStreams(1);

/** The consumers each role owns, by stream: nobody else may create, pull from or delete them. */
function durableConsumers(partitions: number, groups: number, toolNames: readonly string[] | null) {
  const range = Array.from({ length: partitions }, (_, p) => p);
  return [
    [STREAMS.commands.name, { owner: "loop", names: range.map((p) => loopCommandConsumer(p).durable_name) }],
    ...eventStreamNames(groups).map(
      (stream, g) => [stream, { owner: "store", names: [storeGroupConsumer(g).durable_name] }] as const,
    ),
    [
      STREAMS.toolCalls.name,
      { owner: "tools", names: toolNames ? toolNames.map((t) => toolCallConsumer(t).durable_name) : [] },
    ],
  ] as const;
}

/** Permission building blocks, each named after what the role does with the stream or bucket. */
const jsApi = {
  /** `jetstreamManager()` checks the API with `$JS.API.INFO`. */
  account: () => [`${API}.INFO`],
  streamInfo: (stream: string) => [`${API}.STREAM.INFO.${stream}`],
  /** Creating Fleet's topology (idempotent; `applyTopology`): create and read back, never update or delete. */
  provision: (groups: number) =>
    tenantStreams(groups).flatMap((s) => [`${API}.STREAM.INFO.${s}`, `${API}.STREAM.CREATE.${s}`]),
  /** Single messages by sequence or last-by-subject, direct or through the leader. */
  getMessage: (stream: string) => [
    `${API}.STREAM.MSG.GET.${stream}`,
    `${API}.DIRECT.GET.${stream}`,
    `${API}.DIRECT.GET.${stream}.>`,
  ],
  /** Creating, reading, pulling from and deleting consumers (durable or ordered) on one stream. */
  consume: (stream: string) => [
    `${API}.CONSUMER.CREATE.${stream}`,
    `${API}.CONSUMER.CREATE.${stream}.>`,
    `${API}.CONSUMER.INFO.${stream}.*`,
    `${API}.CONSUMER.DELETE.${stream}.*`,
    `${API}.CONSUMER.MSG.NEXT.${stream}.*`,
  ],
  consumerInfo: (stream: string) => [`${API}.CONSUMER.INFO.${stream}.*`],
  ack: (stream: string) => [`$JS.ACK.${stream}.>`],
  /** Flow-control replies of push consumers (KV watches). */
  flowControl: (stream: string) => [`$JS.FC.${stream}.>`],
  kvRead: (bucket: string) => [...jsApi.streamInfo(kvStream(bucket)), ...jsApi.getMessage(kvStream(bucket))],
  /** Writes to a bucket, or only to its keys under `keyPrefix` (`loop` → `$KV.fleet_leases.loop.>`). */
  kvWrite: (bucket: string, keyPrefix?: string) => [`$KV.${bucket}.${keyPrefix ? `${keyPrefix}.` : ""}>`],
  /** Reading objects: their meta (direct gets) and chunks (an ordered push consumer with flow control). */
  objRead: (store: string) => [
    ...jsApi.streamInfo(objStream(store)),
    ...jsApi.getMessage(objStream(store)),
    ...jsApi.consume(objStream(store)),
    ...jsApi.flowControl(objStream(store)),
  ],
  /** Writing objects (chunks and meta); an existing object is never replaced, so no purge. */
  objWrite: (store: string) => [
    `$O.${store}.>`,
    ...jsApi.streamInfo(objStream(store)),
    ...jsApi.getMessage(objStream(store)),
  ],
  kvWatch: (bucket: string) => [...jsApi.consume(kvStream(bucket)), ...jsApi.flowControl(kvStream(bucket))],
};

/** Denies every role but the owner the use of its durable consumers (create, pull, delete). */
function othersConsumers(
  role: FleetRole,
  partitions: number,
  groups: number,
  toolNames: readonly string[] | null,
): string[] {
  const out: string[] = [];
  for (const [stream, { owner, names }] of durableConsumers(partitions, groups, toolNames)) {
    if (owner === role) continue;
    for (const name of names) {
      out.push(
        `${API}.CONSUMER.CREATE.${stream}.${name}`,
        `${API}.CONSUMER.CREATE.${stream}.${name}.>`,
        `${API}.CONSUMER.DELETE.${stream}.${name}`,
        `${API}.CONSUMER.MSG.NEXT.${stream}.${name}`,
      );
    }
  }
  return out;
}

export interface RolePermissionOptions {
  /** P, to name the partition consumers other roles may not touch. */
  partitions: number;
  /** K, to name the event streams (default 1: `FLEET_EVENTS`). */
  groups?: number;
  /**
   * Tool names whose `tool-<name>` consumers other roles may not touch. `null`: any tool name (the
   * rule is then the stream-wide one: only `tools` may consume FLEET_TOOL_CALLS at all).
   */
  toolNames?: readonly string[] | null;
}

const KV = KV_BUCKETS;
/** The event streams' rules: `rule` applied to each of them. */
const eachEventStream = (groups: number, rule: (stream: string) => string[]) => eventStreamNames(groups).flatMap(rule);
const CMD = STREAMS.commands.name;
const CALLS = STREAMS.toolCalls.name;
const RESULTS = STREAMS.toolResults.name;
const OPEN_WORK = STREAMS.openWork.name;
const SCHED = STREAMS.schedules.name;
const BLOBS = OBJECT_STORES.blobs.name;
const ARCHIVE = OBJECT_STORES.archive.name;

/**
 * Reading and writing an object store: puts (chunks and the meta record), gets (an ordered consumer
 * on its chunks, the meta by subject) and deletes (a purge of the object's chunks).
 */
const objectStore = (store: string) => [
  ...jsApi.streamInfo(objStream(store)),
  ...jsApi.getMessage(objStream(store)),
  ...jsApi.consume(objStream(store)),
  `${API}.STREAM.PURGE.${objStream(store)}`,
  `$O.${store}.>`,
];
const INPUTS = OBJECT_STORES.inputs.name;

/** Managing schedules (change 55): appends to a schedule's log, and purges a deleted schedule's subject. */
const scheduleWrites = () => ["fleet.sched.>", `${API}.STREAM.PURGE.${SCHED}`];

/**
 * What any client of a tenant reads: the event log, the store, and the deployment's state for
 * `fleet doctor`, whose storage check writes one key (`fleet_config` `probe`, a timestamp).
 */
function readerPublish(groups: number): string[] {
  return [
    ...jsApi.account(),
    `$KV.${KV.config.name}.${CONFIG_KEYS.probe}`,
    ...tenantStreams(groups).flatMap(jsApi.streamInfo),
    ...[CMD, CALLS].flatMap(jsApi.consumerInfo),
    ...eachEventStream(groups, jsApi.consumerInfo),
    ...eachEventStream(groups, jsApi.getMessage),
    ...eachEventStream(groups, jsApi.consume),
    // Schedules and their slots' outcomes (change 55).
    ...jsApi.getMessage(SCHED),
    ...[KV.config.name, KV.leases.name, KV.tools.name, KV.budgets.name, KV.spend.name, KV.spendTotals.name].flatMap(
      jsApi.kvRead,
    ),
    // Agents (change 54): read, and listed (stream info with a subjects filter, then gets).
    ...jsApi.kvRead(KV.agents.name),
    "fleet.store.*",
    // Content by reference (`fleet_blobs`) and store replies by reference (`fleet_inputs`).
    ...jsApi.objRead(BLOBS),
    ...jsApi.objRead(INPUTS),
  ];
}

/**
 * The subjects a role may publish and subscribe to in its tenant's account. Pure: derived from the
 * subject table (`subjects`), the streams, KV buckets and object store, and the durable consumers'
 * names. No role gets `>` or `$JS.API.>`; none may update, purge or delete a stream except `tools`
 * purging superseded chunks of `fleet_blobs` objects, and `loop` purging a deleted session's subjects
 * of FLEET_EVENTS and FLEET_TOOL_RESULTS and its objects (session lifecycle), the chunks of a
 * `fleet_blobs` object whose write failed, and closed entries of FLEET_OPEN_WORK.
 */
export function rolePermissions(role: FleetRole, opts: RolePermissionOptions): RolePermissions {
  const toolNames = opts.toolNames ?? null;
  const groups = opts.groups ?? 1;
  const ev = (rule: (stream: string) => string[]) => eachEventStream(groups, rule);
  const inbox = `${inboxPrefixOf(role)}.>`;
  const deny = othersConsumers(role, opts.partitions, groups, toolNames);
  const service = [
    ...jsApi.account(),
    ...jsApi.provision(groups),
    ...jsApi.kvWrite(KV.config.name),
    ...jsApi.kvRead(KV.config.name),
  ];
  const result = (publish: string[], subscribe: string[], allowResponses = false, publishDeny = deny) => ({
    publish: { allow: unique(publish), deny: unique(publishDeny) },
    subscribe: { allow: unique([...subscribe, inbox]), deny: [] },
    allowResponses,
  });
  switch (role) {
    case "loop":
      return result(
        [
          ...service,
          subjects.eventsAll,
          subjects.toolCallsAll,
          "fleet.tool.cancel.>",
          "fleet.hook.>",
          ...ev(jsApi.getMessage),
          ...ev(jsApi.consume),
          ...jsApi.consume(CMD),
          ...jsApi.ack(CMD),
          ...jsApi.getMessage(RESULTS),
          ...jsApi.kvRead(KV.leases.name),
          // Its leases `loop.p.<p>` and presence `loop.w.<id>`: never a runner's or the store's keys.
          ...jsApi.kvWrite(KV.leases.name, "loop"),
          ...jsApi.kvWatch(KV.leases.name),
          ...jsApi.kvRead(KV.tools.name),
          ...jsApi.kvWatch(KV.tools.name),
          // The tenant's budget: reads its limits, writes only the ledger of deleted sessions' spend;
          // the day's spend: partitions' totals in `fleet_spend_totals` (change 60), sessions' records
          // in `fleet_spend` (change 43), whose old totals it moves once.
          ...jsApi.kvRead(KV.budgets.name),
          ...jsApi.kvWrite(KV.budgets.name, "ledger"),
          ...jsApi.kvWatch(KV.budgets.name),
          ...jsApi.kvRead(KV.spend.name),
          ...jsApi.kvWrite(KV.spend.name),
          ...jsApi.kvWatch(KV.spend.name),
          ...jsApi.kvRead(KV.spendTotals.name),
          ...jsApi.kvWrite(KV.spendTotals.name),
          ...jsApi.kvWatch(KV.spendTotals.name),
          // Snapshots of its sessions' folds (change 42): read, written, purged with their session.
          ...jsApi.kvRead(KV.snapshots.name),
          ...jsApi.kvWrite(KV.snapshots.name),
          `${API}.STREAM.PURGE.${kvStream(KV.snapshots.name)}`,
          // The tenant's approval rules (key `approval_rules` of `fleet_config`).
          ...jsApi.kvWatch(KV.config.name),
          // Agent versions a session is created from or moved to (change 54).
          ...jsApi.kvRead(KV.agents.name),
          // Session lifecycle: purges a deleted session's events and tool results (by subject), deletes
          // its blobs, writes and reads archives, asks the store for idle sessions (retention).
          ...ev((s) => [`${API}.STREAM.PURGE.${s}`]),
          `${API}.STREAM.PURGE.${RESULTS}`,
          `${API}.STREAM.PURGE.${kvStream(KV.budgets.name)}`,
          `${API}.STREAM.PURGE.${kvStream(KV.spend.name)}`,
          // The open-work index of its partitions (change 41): entries written, read and purged.
          "fleet.openwork.>",
          ...jsApi.streamInfo(OPEN_WORK),
          ...jsApi.getMessage(OPEN_WORK),
          `${API}.STREAM.PURGE.${OPEN_WORK}`,
          ...objectStore(BLOBS),
          ...objectStore(ARCHIVE),
          subjects.store("list_idle"),
          // Command inputs by reference: read, and an accepted command's parts copied to `fleet_blobs`
          // (a copy that fails midway purges its chunks).
          ...jsApi.objRead(INPUTS),
          ...jsApi.objRead(BLOBS),
          ...jsApi.objWrite(BLOBS),
          // The tenant's scheduler (change 55): reads and appends to schedules' logs, fires commands,
          // and asks FLEET_COMMANDS whether a fire's command is still waiting.
          "fleet.sched.>",
          ...jsApi.streamInfo(SCHED),
          ...jsApi.getMessage(SCHED),
          subjects.commandsAll,
          `${API}.STREAM.MSG.GET.${CMD}`,
          // Sub-agents (change 57): a child's owner stores its progress and answer as the parent's
          // `agent` call's records (the parent's owner also starts children: `fleet.cmd.>` above).
          subjects.toolResultsAll,
        ],
        [subjects.toolResultsAll],
      );
    case "tools":
      return result(
        [
          ...service,
          subjects.toolResultsAll,
          ...jsApi.getMessage(RESULTS),
          ...jsApi.consume(CALLS),
          ...jsApi.ack(CALLS),
          ...jsApi.kvRead(KV.leases.name),
          ...jsApi.kvWrite(KV.leases.name, RUNNER_PRESENCE_KEYS.replace(".>", "")),
          ...jsApi.kvRead(KV.tools.name),
          ...jsApi.kvWrite(KV.tools.name),
          ...jsApi.getMessage(objStream(BLOBS)),
          `${API}.STREAM.PURGE.${objStream(BLOBS)}`,
          `$O.${BLOBS}.>`,
          // A deleted session's lifecycle record, read when the runner sweeps its workspaces.
          `${API}.DIRECT.GET.${lifecycleStreamName(groups)}.${subjects.lifecycleAll}`,
        ],
        // Lifecycle records arrive live: a deleted session's workspace is removed at once.
        ["fleet.tool.cancel.>", subjects.lifecycleAll],
      );
    case "store":
      return result(
        [
          ...service,
          ...ev(jsApi.getMessage),
          ...ev(jsApi.consume),
          ...ev(jsApi.ack),
          ...jsApi.kvRead(KV.leases.name),
          ...jsApi.kvWrite(KV.leases.name, "store"),
          // Exports resolve content by reference; replies over max_payload go to `fleet_inputs`.
          ...jsApi.objRead(BLOBS),
          ...jsApi.objWrite(INPUTS),
          // Its notices that a batch is in the indexes (change 74), for the gateway's change feed.
          subjects.storeAppliedAll,
        ],
        [`fleet.store.* ${STORE_QUEUE_GROUP}`],
        true,
      );
    case "hooks":
      // Publishes nothing but its replies (an empty allow list would allow everything).
      return result([], ["fleet.hook.>"], true, [">"]);
    case "reader":
      // The change feed (`FleetClient.changes()`) follows the store's notices and the lifecycle records.
      return result(readerPublish(groups), [subjects.eventsAll, subjects.liveAll, subjects.storeAppliedAll]);
    case "operator":
      // An operator also sets the tenant's daily budget (key `limits` of `fleet_budgets`) and
      // approval rules (key `approval_rules` of `fleet_config`).
      // An operator also writes the inputs of its commands (`fleet_inputs`, before the command).
      return result(
        [
          ...readerPublish(groups),
          subjects.commandsAll,
          `$KV.${KV.budgets.name}.limits`,
          `$KV.${KV.config.name}.${CONFIG_KEYS.approvalRules}`,
          ...jsApi.kvWrite(KV.agents.name),
          ...jsApi.objWrite(INPUTS),
          ...scheduleWrites(),
        ],
        [subjects.eventsAll, subjects.liveAll, subjects.storeAppliedAll],
      );
    case "gateway":
      return result(
        [
          ...readerPublish(groups),
          subjects.commandsAll,
          `$KV.${KV.budgets.name}.limits`,
          `$KV.${KV.config.name}.${CONFIG_KEYS.approvalRules}`,
          ...jsApi.kvWrite(KV.agents.name),
          // Large inputs of the commands it sends, written before the command.
          ...jsApi.objWrite(INPUTS),
          ...scheduleWrites(),
          // Webhooks: creates and watches KV fleet_webhooks, and pulls and acks each registration's
          // durable consumers `webhook-<id>` on the event streams (created and deleted with it).
          ...jsApi.streamInfo(kvStream(KV.webhooks.name)),
          `${API}.STREAM.CREATE.${kvStream(KV.webhooks.name)}`,
          ...jsApi.kvRead(KV.webhooks.name),
          ...jsApi.kvWrite(KV.webhooks.name),
          ...jsApi.kvWatch(KV.webhooks.name),
          ...ev(jsApi.ack),
        ],
        // Events and lifecycle records arrive live: a deleted or restored session's SSE hub is
        // dropped at once. Stored events' copies on the live path (change 67) feed its SSE hubs.
        // The change feed (`GET /v1/changes`) follows the store's notices (change 74) and the
        // lifecycle records.
        [subjects.eventsAll, subjects.liveAll, subjects.storeAppliedAll],
      );
    case "auditor":
      // The SDK's live path subscribes to a session's subject before it reads the stream (change 58).
      // Nothing publishes on it in an audit account (the mirror is fed by JetStream), so the auditor
      // hears nothing there and its reads wake on the live path's periodic read instead. The mirror
      // does not republish (change 67), so its readers stay on that path.
      return result(
        [...jsApi.account(), ...ev(jsApi.streamInfo), ...ev(jsApi.getMessage), ...ev(jsApi.consume)],
        [subjects.eventsAll],
        false,
        [],
      );
    case "audit-admin":
      return result(
        [...jsApi.account(), ...ev(jsApi.streamInfo), ...ev((s) => [`${API}.STREAM.CREATE.${s}`])],
        [],
        false,
        [],
      );
  }
}

/**
 * An audit feed: the tenant exports read access to its event streams (FLEET_EVENTS, or every
 * group's `FLEET_EVENTS_G<g>` with K > 1), and the auditor account keeps a mirror of each under the
 * same name (same sequences and subjects, the whole history, no publishers). The tenant's account
 * serves only the consumer-create requests of those mirrors (`apiPrefix`) and exports the mirrors'
 * delivery subjects (`deliverPrefix`) as a stream.
 */
export function auditFeed(tenant: string, groups = 1) {
  return {
    /** Where the auditor account reaches the tenant's JetStream API (import `to`). */
    apiPrefix: `$JS.${tenant}.API`,
    /** Tenant-side subjects the mirrors' consumers deliver to (a stream export). */
    deliverPrefix: `fleet.audit.${tenant}`,
    /** The tenant's service exports, as `$JS.API…` subjects in its own account, for each event stream. */
    serviceExports: eachEventStream(groups, (s) => [
      `${API}.CONSUMER.CREATE.${s}`,
      `${API}.CONSUMER.CREATE.${s}.>`,
      `$JS.FC.${s}.>`,
    ]),
  } as const;
}

/**
 * The mirror of group `g`'s event stream that an audit-admin creates in the auditor's account
 * (nats.js StreamConfig fields): named as the stream it mirrors.
 */
export function auditMirrorStream(tenant: string, group = 0, groups = 1) {
  const feed = auditFeed(tenant, groups);
  const name = eventStreamName(group, groups);
  return {
    name,
    storage: "file",
    deny_delete: true,
    deny_purge: true,
    allow_direct: true,
    mirror: { name, external: { api: feed.apiPrefix, deliver: feed.deliverPrefix } },
  } as const;
}

function unique(list: string[]): string[] {
  return [...new Set(list)];
}
