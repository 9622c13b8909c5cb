import {
  CONFIG_KEYS,
  DEFAULT_PARTITIONS,
  DEFAULT_STREAM_GROUPS,
  eventStreamSpec,
  KV_BUCKETS,
  type LogTopology,
  logTopologyProblem,
  OBJECT_STORES,
  PROTOCOL_VERSION,
  STREAMS,
  type StreamSpec,
} from "@fleet/protocol";
import { type ConsumerConfig, type JetStreamManager, jetstreamManager, type StreamConfig } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";

export interface Topology {
  partitions: number;
  /** K, the number of event streams (`fleet_config.stream_groups`; 1 on a log made before groups). */
  groups: number;
  /** `{partitions, groups}`: what every reader and writer of the event streams resolves names with. */
  log: LogTopology;
  /** The `fleet_leases` bucket's TTL, as it exists (whoever created it chose it): what leases run on. */
  leaseTtlMs: number;
  /** One line per setting whose live value differs from Fleet's spec. */
  drift: string[];
  kv: { config: KV; leases: KV; tools: KV; budgets: KV; spend: KV; spendTotals: KV };
  jsm: JetStreamManager;
}

export interface ApplyTopologyOptions {
  /**
   * P to write when `fleet_config.partitions` is absent (default 16). Once written it is fixed: a
   * different value given here throws (`TopologyChangeError`), as the log's subjects depend on it.
   */
  partitions?: number | undefined;
  /**
   * K to write when `fleet_config.stream_groups` is absent (default 1; a log made before groups has
   * K = 1). Fixed once written: a different value given here throws (`TopologyChangeError`).
   */
  groups?: number | undefined;
  leaseTtlMs?: number;
  /** How long `fleet_inputs` keeps an object, when this call creates it (default 24 h). */
  inputTtlMs?: number;
  /**
   * Replicas of every stream, KV bucket and the object store when this call creates them
   * (`FLEET_STREAM_REPLICAS`: 1 on a single server, 3 on the cluster). Given, a stream with another
   * count is reported as drift; omitted, the count is not checked.
   */
  replicas?: number;
  logger?: Pick<Logger, "warn" | "info">;
}

/**
 * Creates every stream, KV bucket and object store idempotently (whichever service starts first),
 * then reads each config back and reports drift. Never changes an existing stream's config.
 */
export async function applyTopology(nc: NatsConnection, opts: ApplyTopologyOptions = {}): Promise<Topology> {
  const jsm = await jetstreamManager(nc);
  const drift: string[] = [];
  const replicas = opts.replicas === undefined ? {} : { replicas: opts.replicas };
  const kvm = new Kvm(nc);
  const config = await kvm.create(KV_BUCKETS.config.name, { history: KV_BUCKETS.config.history, ...replicas });
  const log = await ensureLogTopology(config, opts);
  const streams = [
    ...Array.from({ length: log.groups }, (_, g) => eventStreamSpec(g, log)),
    ...Object.values(STREAMS).filter((s) => s.name !== STREAMS.events.name),
  ];
  for (const spec of streams) {
    const wanted = opts.replicas === undefined ? spec : { ...spec, num_replicas: opts.replicas };
    drift.push(...(await ensureStream(jsm, wanted as StreamSpec)));
  }

  const leases = await kvm.create(KV_BUCKETS.leases.name, {
    history: KV_BUCKETS.leases.history,
    ttl: opts.leaseTtlMs ?? KV_BUCKETS.leases.ttlMs,
    ...replicas,
  });
  const tools = await kvm.create(KV_BUCKETS.tools.name, { history: KV_BUCKETS.tools.history, ...replicas });
  const budgets = await kvm.create(KV_BUCKETS.budgets.name, { history: KV_BUCKETS.budgets.history, ...replicas });
  const spend = await kvm.create(KV_BUCKETS.spend.name, {
    history: KV_BUCKETS.spend.history,
    ttl: KV_BUCKETS.spend.ttlMs,
    ...replicas,
  });
  const spendTotals = await kvm.create(KV_BUCKETS.spendTotals.name, {
    history: KV_BUCKETS.spendTotals.history,
    ttl: KV_BUCKETS.spendTotals.ttlMs,
    ...replicas,
  });
  await kvm.create(KV_BUCKETS.snapshots.name, { history: KV_BUCKETS.snapshots.history, ...replicas });
  await kvm.create(KV_BUCKETS.agents.name, { history: KV_BUCKETS.agents.history, ...replicas });
  const objm = new Objm(nc);
  // nats.js deletes `replicas` and `ttl` from the options it is given: each call gets its own copy.
  await objm.create(OBJECT_STORES.blobs.name, { ...replicas });
  await objm.create(OBJECT_STORES.archive.name, { ...replicas });
  await objm.create(OBJECT_STORES.inputs.name, {
    ...replicas,
    ttl: (opts.inputTtlMs ?? OBJECT_STORES.inputs.ttlMs) * 1_000_000,
  });

  const protocol = await ensureConfigNumber(config, CONFIG_KEYS.protocol, PROTOCOL_VERSION);
  if (protocol !== PROTOCOL_VERSION) {
    throw new Error(`fleet_config.protocol is ${protocol}; this build speaks protocol ${PROTOCOL_VERSION}`);
  }
  const leaseTtlMs = (await leases.status()).ttl || (opts.leaseTtlMs ?? KV_BUCKETS.leases.ttlMs);
  if (opts.leaseTtlMs !== undefined && opts.leaseTtlMs !== leaseTtlMs) {
    drift.push(`fleet_leases TTL is ${leaseTtlMs} ms (fixed once created); requested ${opts.leaseTtlMs} ms ignored`);
  }
  for (const line of drift) opts.logger?.warn({ evt: "topology_drift", drift: line }, "topology drift");
  return {
    partitions: log.partitions,
    groups: log.groups,
    log,
    leaseTtlMs,
    drift,
    kv: { config, leases, tools, budgets, spend, spendTotals },
    jsm,
  };
}

/** A service asked for another P or K than the log was made with: both are fixed for its life. */
export class TopologyChangeError extends Error {
  constructor(what: "partitions" | "stream groups", live: number, requested: number) {
    const env = what === "partitions" ? "FLEET_PARTITIONS" : "FLEET_STREAM_GROUPS";
    super(
      `the event log has ${live} ${what} and cannot change to ${requested} (fixed when the log was made): ` +
        `set ${env}=${live} or leave it unset, or start a new deployment for another topology`,
    );
    this.name = "TopologyChangeError";
  }
}

/**
 * Reads P and K from `fleet_config`, writing them when absent: K first, so two fresh services agree
 * on it before either sees P. A log that already has P but no K was made before groups: K = 1.
 * Throws TopologyChangeError when a requested value differs from the log's.
 */
async function ensureLogTopology(config: KV, opts: ApplyTopologyOptions): Promise<LogTopology> {
  const existing = await config.get(CONFIG_KEYS.partitions);
  const existingLog = existing !== null;
  // Checked before anything is written, so a bad request leaves no half-made topology behind.
  const requested = {
    partitions: existing ? Number(existing.string()) : (opts.partitions ?? DEFAULT_PARTITIONS),
    groups: opts.groups ?? DEFAULT_STREAM_GROUPS,
  };
  const requestProblem = logTopologyProblem(requested);
  if (requestProblem) throw new Error(`cannot provision the event log: ${requestProblem}`);
  const groups = await ensureConfigNumber(
    config,
    CONFIG_KEYS.streamGroups,
    existingLog ? DEFAULT_STREAM_GROUPS : (opts.groups ?? DEFAULT_STREAM_GROUPS),
  );
  if (opts.groups !== undefined && opts.groups !== groups) {
    throw new TopologyChangeError("stream groups", groups, opts.groups);
  }
  const partitions = await ensureConfigNumber(config, CONFIG_KEYS.partitions, opts.partitions ?? DEFAULT_PARTITIONS);
  if (opts.partitions !== undefined && opts.partitions !== partitions) {
    throw new TopologyChangeError("partitions", partitions, opts.partitions);
  }
  const log = { partitions, groups };
  const problem = logTopologyProblem(log);
  if (problem) throw new Error(`fleet_config: ${problem}`);
  return log;
}

async function ensureConfigNumber(kv: KV, key: string, fallback: number): Promise<number> {
  try {
    await kv.create(key, JSON.stringify(fallback));
    return fallback;
  } catch {
    const entry = await kv.get(key);
    const value = entry ? Number(entry.string()) : Number.NaN;
    if (!Number.isInteger(value) || value < 1) throw new Error(`fleet_config.${key} holds an invalid value`);
    return value;
  }
}

async function ensureStream(jsm: JetStreamManager, spec: StreamSpec & { num_replicas?: number }): Promise<string[]> {
  const wanted = spec as unknown as Partial<StreamConfig> & { name: string };
  let live: StreamConfig;
  try {
    live = (await jsm.streams.info(spec.name)).config;
  } catch {
    try {
      live = (await jsm.streams.add(wanted)).config;
    } catch (err) {
      // A concurrent creator won the race: read what it created.
      live = (await jsm.streams.info(spec.name).catch(() => Promise.reject(err))).config;
    }
  }
  if (wanted.republish !== undefined && live.republish === undefined) {
    // nats-server 2.9 sets `republish` only at creation: a log made before change 67 keeps working,
    // its readers on the doorbell path (a direct get per stored event and watching connection).
    const { republish: _, ...rest } = wanted;
    return [
      `stream ${spec.name}: made without republish to ${wanted.republish.dest} (before change 67; fixed at creation): live readers use direct gets`,
      ...diffConfig(`stream ${spec.name}`, rest as Record<string, unknown>, live as unknown as Record<string, unknown>),
    ];
  }
  return diffConfig(
    `stream ${spec.name}`,
    wanted as Record<string, unknown>,
    live as unknown as Record<string, unknown>,
  );
}

/**
 * Creates a durable consumer or verifies an existing one; returns drift lines. Consumers are created
 * by the service that reads them (their names are data in @fleet/protocol).
 */
export async function ensureConsumer(
  jsm: JetStreamManager,
  stream: string,
  config: Record<string, unknown> & { durable_name: string },
): Promise<string[]> {
  const wanted = config as unknown as Partial<ConsumerConfig>;
  try {
    const info = await jsm.consumers.info(stream, config.durable_name);
    return diffConfig(
      `consumer ${stream}/${config.durable_name}`,
      config,
      info.config as unknown as Record<string, unknown>,
    );
  } catch {
    try {
      await jsm.consumers.add(stream, wanted);
    } catch (err) {
      await jsm.consumers.info(stream, config.durable_name).catch(() => Promise.reject(err));
    }
    return [];
  }
}

/** Lists every field of `wanted` whose live value differs (the server may add fields; those are ignored). */
export function diffConfig(what: string, wanted: Record<string, unknown>, live: Record<string, unknown>): string[] {
  const lines: string[] = [];
  for (const [key, value] of Object.entries(wanted)) {
    const actual = live[key];
    const same =
      JSON.stringify(value) === JSON.stringify(actual) ||
      (value === false && actual === undefined) ||
      (value === 0 && actual === undefined);
    if (!same) lines.push(`${what}: ${key} is ${JSON.stringify(actual)}, expected ${JSON.stringify(value)}`);
  }
  return lines;
}
