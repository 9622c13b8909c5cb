// Opening a client: the NATS login, JetStream, and P from KV `fleet_config`.
import { CONFIG_KEYS, KV_BUCKETS } from "@fleet/protocol";
import {
  connectFleet,
  createBlobAccess,
  type NatsAuthSettings,
  NatsConnectError,
  natsAuthFromEnv,
  redactUrl,
} from "@fleet/runtime";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ClientContext } from "./client-context.js";
import { FleetError, isFleetError } from "./errors.js";
import { republishingStreams } from "./live-streams.js";
import { describeError, isPermissionDenied } from "./nats-failures.js";

export interface FleetClientOptions {
  /** Comma-separated server URLs. Default `nats://127.0.0.1:4222`. */
  natsUrl?: string;
  /** Connection name shown in server monitoring. Default `fleet-client`. */
  name?: string;
  /** Initial connect timeout. Default 5 000 ms. */
  connectTimeoutMs?: number;
  /** How long a command waits for its outcome event. Default 30 000 ms. */
  commandTimeoutMs?: number;
  /** How long a session-store query waits for its reply. Default 10 000 ms. */
  requestTimeoutMs?: number;
  /** Reconnect attempts after the connection is lost; default -1 (forever). */
  maxReconnectAttempts?: number;
  /** Partition count P; default: read from KV `fleet_config` (key `partitions`). */
  partitions?: number;
  /**
   * Stream groups K; default: read from KV `fleet_config` (key `stream_groups`, 1 when absent), or 1
   * when `partitions` is given.
   */
  groups?: number;
  /**
   * How to log in: a creds file, an nkey seed file, user and password, a token, TLS files. Default:
   * the NATS_CREDS, NATS_NKEY, NATS_USER/NATS_PASSWORD, NATS_TOKEN and NATS_TLS_* variables; `{}` =
   * anonymous. The user is a tenant's `reader` (watch, replay, queries) or `operator` (also commands).
   */
  auth?: NatsAuthSettings;
  /**
   * Called with one line for each permission violation on this connection (naming the user and the
   * subject), e.g. a reader that sent a command. The failing call also rejects.
   */
  onPermissionError?: (line: string) => void;
}

/** The options `FleetClient.fromConnection` takes: those that do not open the connection. */
export type ConnectionOptions = Omit<FleetClientOptions, "natsUrl" | "name" | "maxReconnectAttempts">;

/** An opened client's context and timeouts. */
export interface OpenedClient {
  ctx: ClientContext;
  commandTimeoutMs: number;
  requestTimeoutMs: number;
}

const DEFAULT_URL = "nats://127.0.0.1:4222";

/**
 * Opens the NATS connection as the `operator` role's client.
 * Errors: `FleetError` `unavailable` (`login_refused`, `connection_refused`), `invalid_input` (`nats_auth`).
 */
export async function connectClientNats(opts: FleetClientOptions): Promise<NatsConnection> {
  const url = opts.natsUrl ?? DEFAULT_URL;
  try {
    const { nc } = await connectFleet({
      role: "operator",
      url,
      name: opts.name ?? "fleet-client",
      auth: opts.auth ?? natsAuthFromEnv(process.env),
      timeoutMs: opts.connectTimeoutMs ?? 5_000,
      maxReconnectAttempts: opts.maxReconnectAttempts ?? -1,
      ...(opts.onPermissionError ? { onPermissionError: opts.onPermissionError } : {}),
    });
    return nc;
  } catch (err) {
    const message = describeError(err);
    if (err instanceof NatsConnectError && err.code === "login_refused") {
      throw new FleetError("unavailable", "login_refused", message, { cause: err });
    }
    if (err instanceof NatsConnectError && err.code === "settings") {
      throw new FleetError("invalid_input", "nats_auth", message, { cause: err });
    }
    throw new FleetError("unavailable", "connection_refused", `cannot reach NATS at ${redactUrl(url)} (${message})`, {
      cause: err,
    });
  }
}

/**
 * Opens JetStream on `nc` and reads P from KV `fleet_config` unless given.
 * Errors: `FleetError` `unavailable` (`jetstream`, `not_set_up`, `permission`), `protocol` (`invalid_config`).
 */
export async function openClient(nc: NatsConnection, opts: ConnectionOptions): Promise<OpenedClient> {
  const url = nc.getServer();
  try {
    const jsm = await jetstreamManager(nc, { timeout: opts.connectTimeoutMs ?? 5_000 });
    const partitions = opts.partitions ?? (await readPartitions(nc, url));
    const groups = opts.groups ?? (opts.partitions !== undefined ? 1 : await readGroups(nc));
    return {
      ctx: {
        nc,
        js: jetstream(nc),
        jsm,
        partitions,
        groups,
        liveStreams: await republishingStreams(jsm, groups),
        blobs: createBlobAccess(nc),
      },
      commandTimeoutMs: opts.commandTimeoutMs ?? 30_000,
      requestTimeoutMs: opts.requestTimeoutMs ?? 10_000,
    };
  } catch (err) {
    if (isFleetError(err)) throw err;
    throw new FleetError(
      "unavailable",
      "jetstream",
      `JetStream is not available at ${redactUrl(url)} (${describeError(err)})`,
      { cause: err },
    );
  }
}

/** K from KV `fleet_config` (`stream_groups`); a log made before stream groups has none: K = 1. */
async function readGroups(nc: NatsConnection): Promise<number> {
  const kv = await new Kvm(nc).open(KV_BUCKETS.config.name);
  const entry = await kv.get(CONFIG_KEYS.streamGroups);
  return entry?.operation === "PUT" ? configCount(CONFIG_KEYS.streamGroups, Number(entry.string())) : 1;
}

/** A count of `fleet_config` (P, K): a positive integer, else `protocol`/`invalid_config`. */
function configCount(key: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new FleetError("protocol", "invalid_config", `${KV_BUCKETS.config.name}.${key} is invalid`);
  }
  return value;
}

async function readPartitions(nc: NatsConnection, url: string): Promise<number> {
  const missing = () =>
    new FleetError(
      "unavailable",
      "not_set_up",
      `Fleet is not set up on ${redactUrl(url)}: KV ${KV_BUCKETS.config.name} has no ${CONFIG_KEYS.partitions} (start the stack with fleet up)`,
    );
  let value: number;
  try {
    const kv = await new Kvm(nc).open(KV_BUCKETS.config.name);
    const entry = await kv.get(CONFIG_KEYS.partitions);
    if (entry?.operation !== "PUT") throw missing();
    value = Number(entry.string());
  } catch (err) {
    if (isFleetError(err)) throw err;
    if (isPermissionDenied(err)) {
      throw new FleetError(
        "unavailable",
        "permission",
        `cannot read KV ${KV_BUCKETS.config.name}: ${describeError(err)}`,
      );
    }
    throw missing();
  }
  return configCount(CONFIG_KEYS.partitions, value);
}
