// Reads what a deployment looks like on NATS: config, streams and drift, leases, tools and runners, lags.
import {
  CONFIG_KEYS,
  decodeRunnerPresence,
  decodeToolRegistration,
  eventStreamName,
  eventStreamSpec,
  KV_BUCKETS,
  leaseKey,
  loopCommandConsumer,
  runnerPresenceKey,
  STREAMS,
  type StreamSpec,
  storeGroupConsumer,
  storeGroupLeaseKey,
  toolCallConsumer,
} from "@fleet/protocol";
import { diffConfig, isStorageFullError, LeaseValue, readKvEntries } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";

export interface StreamReport {
  name: string;
  exists: boolean;
  messages: number;
  drift: string[];
}

export interface LeaseReport {
  role: "loop" | "store";
  /** What a lease is of: a partition (loop, `loop.p.<p>`) or a stream group (store, `store.g.<g>`). */
  unit: "p" | "g";
  /** How many leases the role has: P for the loop, K for the store. */
  total: number;
  held: number;
  /** workerId → partitions (or groups) held. */
  holders: Record<string, number[]>;
  unheld: number[];
}

export interface ToolReport {
  name: string;
  description: string;
  /** Live runners (presence keys `runner.<id>`) that serve this tool. */
  runners: string[];
  /** Calls waiting in the work queue, and calls delivered but not yet acked (running). */
  queued: number;
  running: number;
  consumer: boolean;
}

/** Whether JetStream takes writes, and how much of the account's file storage is used. */
export interface StorageReport {
  /** JetStream file storage the account uses (bytes); null when the account info could not be read. */
  usedBytes: number | null;
  /**
   * The account's file storage limit (`max_file`, bytes); null when the account has none (the server's
   * own `max_file_store` is not visible to clients: only `full` tells when it is reached).
   */
  limitBytes: number | null;
  /**
   * JetStream refuses writes for lack of storage: the probe write (KV `fleet_config` key `probe`) was
   * refused as full, or the account has less than one largest message (1 MiB) left of its limit.
   * Commands are then refused with `storage_full` and runs wait for space.
   */
  full: boolean;
  /** Why the probe write failed, when it did (a refusal as full included); null when it was stored. */
  probeError: string | null;
}

export interface DeploymentReport {
  partitions: number | null;
  /** K, the number of event streams (1 when `fleet_config` has none: a log made before groups). */
  groups: number;
  protocol: number | null;
  streams: StreamReport[];
  leases: LeaseReport[];
  /** Live workers per role from the presence keys `<role>.w.<workerId>`. */
  workers: { loop: string[]; store: string[]; runners: string[] };
  tools: ToolReport[];
  /** Events not yet applied by the store (pending + unacked over every `store-g*` consumer); null = no consumer. */
  storeLag: number | null;
  /** Commands waiting for a loop worker over every `loop-p*` consumer; null = no consumer. */
  commandBacklog: number | null;
  /** Partitions whose store consumer is missing. */
  storeConsumersMissing: number;
  storage: StorageReport;
}

/** Collects the report. Contract: never throws for a missing bucket, stream or consumer: those are reported. */
export async function inspectDeployment(nc: NatsConnection, jsm: JetStreamManager): Promise<DeploymentReport> {
  const kvm = new Kvm(nc);
  const config = await openKv(kvm, KV_BUCKETS.config.name);
  const partitions = config ? await readNumber(config, CONFIG_KEYS.partitions) : null;
  const protocol = config ? await readNumber(config, CONFIG_KEYS.protocol) : null;
  const groups = (config ? await readNumber(config, CONFIG_KEYS.streamGroups) : null) ?? 1;
  const log = { partitions: partitions ?? groups, groups };

  const streams: StreamReport[] = [];
  const specs = [
    ...Array.from({ length: groups }, (_, g) => eventStreamSpec(g, log)),
    ...(Object.values(STREAMS) as StreamSpec[]).filter((s) => s.name !== STREAMS.events.name),
  ];
  for (const spec of specs) {
    try {
      const info = await jsm.streams.info(spec.name);
      streams.push({
        name: spec.name,
        exists: true,
        messages: info.state.messages,
        drift: diffConfig(
          `stream ${spec.name}`,
          spec as unknown as Record<string, unknown>,
          info.config as unknown as Record<string, unknown>,
        ),
      });
    } catch {
      streams.push({ name: spec.name, exists: false, messages: 0, drift: [] });
    }
  }

  const leasesKv = await openKv(kvm, KV_BUCKETS.leases.name);
  const leaseEntries = leasesKv ? await readAll(leasesKv) : new Map<string, string>();
  const leases: LeaseReport[] = (["loop", "store"] as const).map((role) => {
    const total = partitions === null ? 0 : role === "loop" ? partitions : groups;
    const report: LeaseReport = { role, unit: role === "loop" ? "p" : "g", total, held: 0, holders: {}, unheld: [] };
    for (let p = 0; p < total; p++) {
      const raw = leaseEntries.get(role === "loop" ? leaseKey(role, p) : storeGroupLeaseKey(p));
      const value = raw === undefined ? undefined : LeaseValue.safeParse(safeJson(raw));
      if (!value?.success) {
        report.unheld.push(p);
        continue;
      }
      report.held++;
      const held = report.holders[value.data.workerId] ?? [];
      held.push(p);
      report.holders[value.data.workerId] = held;
    }
    return report;
  });
  const keysWith = (prefix: string) =>
    [...leaseEntries.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
  // A runner whose presence value does not decode is listed, serving nothing.
  const runnerTools = new Map<string, string[]>();
  for (const runnerId of keysWith(runnerPresenceKey(""))) {
    const presence = decodeRunnerPresence(leaseEntries.get(runnerPresenceKey(runnerId)) ?? "");
    runnerTools.set(runnerId, presence.ok ? Object.keys(presence.value.tools) : []);
  }

  const toolsKv = await openKv(kvm, KV_BUCKETS.tools.name);
  const tools: ToolReport[] = [];
  for (const [name, raw] of toolsKv ? await readAll(toolsKv) : new Map<string, string>()) {
    const decoded = decodeToolRegistration(raw);
    const consumer = await consumerLag(jsm, STREAMS.toolCalls.name, toolCallConsumer(name).durable_name);
    tools.push({
      name,
      description: decoded.ok ? decoded.value.description : "(invalid registration)",
      runners: [...runnerTools].filter(([, served]) => served.includes(name)).map(([id]) => id),
      queued: consumer?.pending ?? 0,
      running: consumer?.ackPending ?? 0,
      consumer: consumer !== undefined,
    });
  }

  let storeLag: number | null = null;
  let commandBacklog: number | null = null;
  let storeConsumersMissing = 0;
  for (let g = 0; g < (partitions === null ? 0 : groups); g++) {
    const store = await consumerLag(jsm, eventStreamName(g, groups), storeGroupConsumer(g).durable_name);
    if (store) storeLag = (storeLag ?? 0) + store.pending + store.ackPending;
    else storeConsumersMissing++;
  }
  for (let p = 0; p < (partitions ?? 0); p++) {
    const loop = await consumerLag(jsm, STREAMS.commands.name, loopCommandConsumer(p).durable_name);
    if (loop) commandBacklog = (commandBacklog ?? 0) + loop.pending + loop.ackPending;
  }

  return {
    partitions,
    groups,
    protocol,
    streams,
    leases,
    workers: { loop: keysWith("loop.w."), store: keysWith("store.w."), runners: [...runnerTools.keys()] },
    tools,
    storeLag,
    commandBacklog,
    storeConsumersMissing,
    storage: await inspectStorage(jsm, config),
  };
}

/** The largest message a Fleet stream takes (`max_msg_size`): an account with less left refuses some appends. */
const LARGEST_MESSAGE = STREAMS.events.max_msg_size;

/** Reads the account's storage use and limit, and writes the probe key to see whether JetStream takes writes. */
async function inspectStorage(jsm: JetStreamManager, config: KV | undefined): Promise<StorageReport> {
  let usedBytes: number | null = null;
  let limitBytes: number | null = null;
  try {
    const info = await jsm.getAccountInfo();
    usedBytes = info.storage;
    limitBytes = info.limits.max_storage > 0 ? info.limits.max_storage : null;
  } catch {
    // reported as unknown
  }
  let refused = false;
  let probeError: string | null = config ? null : `KV ${KV_BUCKETS.config.name} is missing`;
  if (config) {
    try {
      await config.put(CONFIG_KEYS.probe, JSON.stringify({ ts: Date.now() }));
    } catch (err) {
      refused = isStorageFullError(err);
      probeError = (err as Error).message || String(err);
    }
  }
  const nearLimit = usedBytes !== null && limitBytes !== null && limitBytes - usedBytes < LARGEST_MESSAGE;
  return { usedBytes, limitBytes, full: refused || nearLimit, probeError };
}

/** Ready = JetStream takes writes, every loop and store lease is held and every tool is served by a live runner. */
export function isReady(report: DeploymentReport): boolean {
  return (
    report.partitions !== null &&
    !report.storage.full &&
    report.leases.every((l) => l.unheld.length === 0) &&
    report.tools.length > 0 &&
    report.tools.every((t) => t.runners.length > 0)
  );
}

async function openKv(kvm: Kvm, name: string): Promise<KV | undefined> {
  try {
    const kv = await kvm.open(name);
    await kv.status();
    return kv;
  } catch {
    return undefined;
  }
}

async function readNumber(kv: KV, key: string): Promise<number | null> {
  try {
    const entry = await kv.get(key);
    const n = entry?.operation === "PUT" ? Number(entry.string()) : Number.NaN;
    return Number.isFinite(n) ? n : null;
  } catch {
    return null;
  }
}

async function readAll(kv: KV): Promise<Map<string, string>> {
  const values = new Map<string, string>();
  try {
    for (const entry of await readKvEntries(kv)) values.set(entry.key, entry.string());
  } catch {
    // an unreadable bucket reads as empty
  }
  return values;
}

async function consumerLag(
  jsm: JetStreamManager,
  stream: string,
  name: string,
): Promise<{ pending: number; ackPending: number } | undefined> {
  try {
    const info = await jsm.consumers.info(stream, name);
    return { pending: info.num_pending, ackPending: info.num_ack_pending };
  } catch {
    return undefined;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
