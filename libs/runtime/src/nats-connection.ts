import { MIN_NATS_SERVER } from "@fleet/protocol";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { atLeast } from "./semver.js";

export interface ConnectOptions {
  url: string;
  /** Connection name shown in server monitoring (`fleet-loop-<id>`). */
  name: string;
  /** Reconnect forever by default: services outlive server restarts. */
  maxReconnectAttempts?: number;
  /**
   * Capture an async stack trace for every request (nats.js default). Off by default here: on the
   * append path it cost about a fifth of the loop's CPU; errors still carry their messages and codes.
   */
  asyncTraces?: boolean;
  timeoutMs?: number;
}

export function connectNats(opts: ConnectOptions): Promise<NatsConnection> {
  return connect({
    servers: opts.url.split(","),
    name: opts.name,
    maxReconnectAttempts: opts.maxReconnectAttempts ?? -1,
    reconnectTimeWait: 250,
    timeout: opts.timeoutMs ?? 5_000,
    noAsyncTraces: !(opts.asyncTraces ?? false),
  });
}

/** What the server offers, and which optional features are missing on it. */
export interface ServerCapabilities {
  version: string;
  jetstream: boolean;
  /** Features of newer servers that Fleet does not use on this one (for `fleet doctor`). */
  gaps: string[];
}

const FEATURE_GATES: ReadonlyArray<[string, string]> = [
  ["2.10.0", "multi-filter consumers (filter_subjects)"],
  ["2.11.0", "per-message TTL and Expected-Last-Subject-Sequence-Subject"],
  ["2.12.0", "atomic batch publish"],
];

/**
 * Checks the server version and JetStream availability. Returns an error string (data) when Fleet
 * cannot run on this server.
 */
export async function checkServer(
  nc: NatsConnection,
): Promise<{ ok: true; caps: ServerCapabilities } | { ok: false; error: string }> {
  const version = nc.info?.version ?? "0.0.0";
  if (!atLeast(version, MIN_NATS_SERVER)) {
    return { ok: false, error: `nats-server ${version} is too old: Fleet needs ${MIN_NATS_SERVER} or newer` };
  }
  try {
    const jsm = await jetstreamManager(nc, { timeout: 5_000 });
    await jsm.getAccountInfo();
  } catch (err) {
    return {
      ok: false,
      error: `JetStream is not available on nats-server ${version} (${(err as Error).message}); start it with -js`,
    };
  }
  const gaps = FEATURE_GATES.filter(([min]) => !atLeast(version, min)).map(([min, f]) => `${f} (needs ${min})`);
  return { ok: true, caps: { version, jetstream: true, gaps } };
}
