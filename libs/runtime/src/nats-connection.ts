import { type FleetRole, inboxPrefixOf, MIN_NATS_SERVER } from "@fleet/protocol";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { buildNatsAuth, type NatsAuth, type NatsAuthSettings, redactUrl } from "./nats-auth.js";
import { atLeast } from "./semver.js";
import { sleep } from "./sleep.js";

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
  /** Login and TLS (`buildNatsAuth`); none = anonymous, as `npm start`'s local server expects. */
  auth?: NatsAuth;
  /**
   * Prefix of every reply inbox (requests, JetStream acks and pulls, KV watches). Each role has its
   * own (`inboxPrefixOf` in @fleet/protocol), so its NATS user may subscribe to its own replies only.
   */
  inboxPrefix?: string;
}

/** Why a connection could not be made: bad login settings, a refused login, or anything else. */
export class NatsConnectError extends Error {
  readonly code: "settings" | "login_refused" | "unreachable";
  constructor(code: NatsConnectError["code"], message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "NatsConnectError";
    this.code = code;
  }
}

/**
 * Connects. Contract: rejects with a NatsConnectError whose message is one line naming the server
 * (without credentials) and, for a refused login, who tried to log in.
 */
export async function connectNats(opts: ConnectOptions): Promise<NatsConnection> {
  try {
    return await connect({
      servers: opts.url.split(","),
      name: opts.name,
      maxReconnectAttempts: opts.maxReconnectAttempts ?? -1,
      reconnectTimeWait: 250,
      timeout: opts.timeoutMs ?? 5_000,
      noAsyncTraces: !(opts.asyncTraces ?? false),
      ...(opts.inboxPrefix ? { inboxPrefix: opts.inboxPrefix } : {}),
      ...opts.auth?.options,
    });
  } catch (err) {
    const code = isLoginError(err) ? "login_refused" : "unreachable";
    throw new NatsConnectError(code, describeConnectError(err, opts.url, opts.auth?.identity ?? "anonymous"), {
      cause: err,
    });
  }
}

/** One line for a failed connect: a refused login names the user; anything else names the server. */
export function describeConnectError(err: unknown, url: string, identity: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const server = redactUrl(url);
  if (isLoginError(err)) return `NATS at ${server} refused the login of ${identity}: ${message}`;
  return `cannot connect to NATS at ${server} as ${identity}: ${message}`;
}

function isLoginError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    err.name === "AuthorizationError" ||
    err.name === "UserAuthenticationExpiredError" ||
    /authorization violation|authentication/i.test(err.message)
  );
}

/**
 * Reports every permission violation the server sends on this connection as one line naming the
 * user, the operation and the subject (e.g. `NATS denied user "loop" publish to "fleet.tool.call.x"`).
 * Runs until the connection closes.
 */
export function watchPermissionErrors(
  nc: NatsConnection,
  identity: string,
  report: (line: string, detail: { operation: string; subject: string }) => void,
): void {
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type !== "error") continue;
      const err = status.error as Error & { operation?: string; subject?: string; queue?: string };
      if (err.name !== "PermissionViolationError") continue;
      const operation = err.operation === "subscription" ? "subscribe" : (err.operation ?? "publish");
      const subject = err.subject ?? "?";
      const queue = err.queue ? ` (queue ${err.queue})` : "";
      report(`NATS denied ${identity} ${operation} to ${JSON.stringify(subject)}${queue}`, { operation, subject });
    }
  })().catch(() => undefined);
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
 * cannot run on this server. With `waitMs`, JetStream that does not answer (a server restarting, a
 * cluster electing its leaders) is asked again every `retryMs` until it answers or `waitMs` is over,
 * so a service started during an outage waits for the bus instead of exiting; a server that is too
 * old fails at once.
 */
export async function checkServer(
  nc: NatsConnection,
  opts: { waitMs?: number; retryMs?: number; onRetry?: (error: string) => void } = {},
): Promise<{ ok: true; caps: ServerCapabilities } | { ok: false; error: string }> {
  const version = nc.info?.version ?? "0.0.0";
  if (!atLeast(version, MIN_NATS_SERVER)) {
    return { ok: false, error: `nats-server ${version} is too old: Fleet needs ${MIN_NATS_SERVER} or newer` };
  }
  const deadline = Date.now() + (opts.waitMs ?? 0);
  for (;;) {
    try {
      const jsm = await jetstreamManager(nc, { timeout: 5_000 });
      await jsm.getAccountInfo();
      break;
    } catch (err) {
      const error = `JetStream is not available on nats-server ${version} (${(err as Error).message}); start it with -js`;
      if (Date.now() >= deadline || nc.isClosed()) return { ok: false, error };
      opts.onRetry?.(error);
      await sleep(opts.retryMs ?? 1_000);
    }
  }
  const gaps = FEATURE_GATES.filter(([min]) => !atLeast(version, min)).map(([min, f]) => `${f} (needs ${min})`);
  return { ok: true, caps: { version, jetstream: true, gaps } };
}

/** How a Fleet process connects: its role (inbox prefix), where, and its login settings. */
export interface FleetConnectOptions {
  role: FleetRole;
  url: string;
  name: string;
  auth?: NatsAuthSettings;
  timeoutMs?: number;
  maxReconnectAttempts?: number;
  /** Receives each permission violation as one line (default: ignored). */
  onPermissionError?: (line: string, detail: { operation: string; subject: string }) => void;
}

/**
 * Connects as a Fleet role: builds the login from the settings, uses the role's inbox prefix, and
 * reports permission violations. Contract: rejects with one-line Errors (bad settings, unreachable
 * server, refused login naming the user); secrets never appear in them.
 */
export async function connectFleet(opts: FleetConnectOptions): Promise<{ nc: NatsConnection; identity: string }> {
  const built = buildNatsAuth(opts.auth ?? {});
  if (!built.ok) throw new NatsConnectError("settings", built.error);
  const nc = await connectNats({
    url: opts.url,
    name: opts.name,
    auth: built.auth,
    inboxPrefix: inboxPrefixOf(opts.role),
    ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    ...(opts.maxReconnectAttempts !== undefined ? { maxReconnectAttempts: opts.maxReconnectAttempts } : {}),
  });
  if (opts.onPermissionError) watchPermissionErrors(nc, built.auth.identity, opts.onPermissionError);
  return { nc, identity: built.auth.identity };
}

/** How long a starting service waits for JetStream before it gives up. */
export const STARTUP_JETSTREAM_WAIT_MS = 60_000;

/** `checkServer` for a starting service: waits for JetStream, logging each failed try. */
export const checkServerAtStartup = (nc: NatsConnection, logger: Pick<Logger, "warn">) =>
  checkServer(nc, {
    waitMs: STARTUP_JETSTREAM_WAIT_MS,
    onRetry: (error) => logger.warn({ evt: "jetstream_wait", error }, "waiting for JetStream"),
  });
