// Plumbing shared by the LLM API fakes (Anthropic, OpenAI): request reading, JSON replies, waiting
// on recorded requests, and listening/stopping over node:http.

import type { EventEmitter } from "node:events";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { trackResource } from "./cleanup-registry.js";

export const FAKE_HOST = "127.0.0.1";
const SECRET_HEADERS = new Set(["authorization", "x-api-key"]);

/** How a request's response ended. */
export type RequestOutcome =
  /** Still writing, or stalled. */
  | "pending"
  /** The response was written completely. */
  | "completed"
  /** The client closed the connection before the response was complete (e.g. an AbortSignal). */
  | "client_closed"
  /** `stop()` destroyed the connection. */
  | "server_closed";

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", () => resolve(Buffer.concat(chunks).toString("utf8")));
  });
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** How a request authenticated, and its key (fake servers only ever see test keys). */
export interface RequestAuth {
  readonly auth: "bearer" | "x-api-key" | "none";
  readonly apiKey: string | undefined;
}

export function readAuth(req: IncomingMessage): RequestAuth {
  const bearer = /^Bearer\s+(.*)$/i.exec(req.headers.authorization ?? "");
  if (bearer !== null) return { auth: "bearer", apiKey: bearer[1]?.trim() };
  const key = req.headers["x-api-key"];
  if (typeof key === "string") return { auth: "x-api-key", apiKey: key };
  return { auth: "none", apiKey: undefined };
}

export function publicHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || SECRET_HEADERS.has(name)) continue;
    headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(payload),
  });
  res.end(payload);
}

export function formatIssue(issue: { readonly path: readonly PropertyKey[]; readonly message: string }): string {
  return `${issue.path.map(String).join(".") || "body"}: ${issue.message}`;
}

export function sleepUnlessClosed(res: ServerResponse, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const finish = (): void => {
      clearTimeout(timer);
      res.off("close", finish);
      resolve();
    };
    const timer = setTimeout(finish, ms);
    res.once("close", finish);
  });
}

/**
 * Resolves with `probe()`'s first defined value, re-probing on every `change` of `changes`; rejects
 * after `timeoutMs` with `<fake>: timed out after … waiting for <what>`.
 */
export function waitForChange<T>(
  changes: EventEmitter,
  fake: string,
  what: string,
  timeoutMs: number,
  probe: () => T | undefined,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const value = probe();
      if (value === undefined) return;
      done();
      resolve(value);
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${fake}: timed out after ${timeoutMs} ms waiting for ${what}`));
    }, timeoutMs);
    timer.unref();
    const done = (): void => {
      clearTimeout(timer);
      changes.off("change", check);
    };
    changes.on("change", check);
    check();
  });
}

/**
 * Listens on 127.0.0.1 (`port`, default a free one) and registers the server for test cleanup.
 * `stop()` is idempotent and destroys open connections; `isStopping()` tells a closed response
 * from a client abort.
 */
export async function listenFake(
  server: Server,
  label: string,
  port = 0,
): Promise<{ port: number; stop: () => Promise<void>; isStopping: () => boolean }> {
  let stopping = false;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: FAKE_HOST, port }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
    untrack();
  };
  const untrack = trackResource({
    label: `${label} :${bound}`,
    killSync: () => server.closeAllConnections(),
    stop,
  });
  return { port: bound, stop, isStopping: () => stopping };
}

/** How a scripted stream is written: pacing, a stall, an early error. */
export interface StreamPlan {
  /** Wait this long before writing each event after the first. */
  readonly eventDelayMs?: number | undefined;
  /** Write this many events, then nothing more, keeping the connection open (the client's abort or `stop()` closes it). */
  readonly stallAfterEvents?: number | undefined;
  /** Write this many events, then `text` (an encoded error event), then end the response. */
  readonly errorAfter?: { readonly events: number; readonly text: string } | undefined;
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/**
 * Writes `events` (already encoded) as an SSE response following `plan`, counting each written event
 * in `record.eventsWritten`; a complete stream ends with `tail`. Stops at once when the client goes away.
 */
export async function writeSseStream(
  res: ServerResponse,
  events: readonly string[],
  plan: StreamPlan,
  record: { eventsWritten: number },
  tail = "",
): Promise<void> {
  res.writeHead(200, {
    ...plan.headers,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  res.flushHeaders();
  for (let i = 0; i <= events.length; i++) {
    if (res.destroyed) return;
    if (plan.errorAfter !== undefined && i === plan.errorAfter.events) {
      res.end(plan.errorAfter.text);
      return;
    }
    if (i === plan.stallAfterEvents) return;
    const event = events[i];
    if (event === undefined) break;
    if (i > 0 && plan.eventDelayMs !== undefined && plan.eventDelayMs > 0) {
      await sleepUnlessClosed(res, plan.eventDelayMs);
      if (res.destroyed) return;
    }
    res.write(event);
    record.eventsWritten++;
  }
  res.end(tail);
}
