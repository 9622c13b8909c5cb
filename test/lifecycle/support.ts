// What the session lifecycle tests look at: everything a session leaves behind in NATS, Redis and on
// the runners' disk, read straight from the servers.
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { FleetClient } from "@fleet/client";
import {
  archiveNames,
  BUDGET_KEYS,
  decodeEvent,
  type FleetEvent,
  foldSessionEvents,
  KV_BUCKETS,
  LedgerRecord,
  OBJECT_STORES,
  type ParsedArchive,
  parseArchive,
  SPEND_KEYS,
  STREAMS,
  subjects,
} from "@fleet/protocol";
import { readSubject } from "@fleet/runtime";
import { fakeReply, fakeText } from "@fleet/testkit";
import { Base64UrlPaddedCodec, Objm } from "@nats-io/obj";
import type { GatewayStack } from "../gateway/support.js";

/** The session's events as stored now, in order. */
export async function storedEvents(client: FleetClient, sessionId: string): Promise<FleetEvent[]> {
  const out: FleetEvent[] = [];
  for await (const rec of readSubject(client.js, client.jsm, STREAMS.events.name, client.eventSubject(sessionId))) {
    const decoded = decodeEvent(rec.data);
    if (!decoded.ok) throw new Error(`undecodable event at ${rec.seq}: ${decoded.error}`);
    out.push(decoded.value);
  }
  return out;
}

/** The events of the session's archive (object store `fleet_archive`), as parsed. */
export async function archivedEvents(client: FleetClient, sessionId: string): Promise<ParsedArchive> {
  const store = await new Objm(client.nc).open(OBJECT_STORES.archive.name);
  const bytes = await store.getBlob(archiveNames(sessionId).events);
  if (bytes === null) throw new Error(`no archive of ${sessionId}`);
  const parsed = parseArchive(new TextDecoder().decode(bytes));
  if (!parsed.ok) throw new Error(`archive of ${sessionId}: ${parsed.error}`);
  return parsed.value;
}

/**
 * Whether `archived` is `history` (the session's log as a test read it before archiving), then only
 * `owner_change`s: a worker that took the partition over meanwhile (a lease lapsed on a loaded
 * machine) announces itself before the archive's outcome, and the archive holds that too.
 */
export function isHistoryThenOwnerChanges(archived: readonly FleetEvent[], history: readonly FleetEvent[]): boolean {
  const later = archived.slice(history.length);
  return (
    JSON.stringify(archived.slice(0, history.length)) === JSON.stringify(history) &&
    later.every((e) => e.type === "owner_change")
  );
}

/** How many messages a stream holds on subjects matching `filter`. */
export async function messagesOn(client: FleetClient, stream: string, filter: string): Promise<number> {
  const info = await client.jsm.streams.info(stream, { subjects_filter: filter });
  return Object.values(info.state.subjects ?? {}).reduce((n, c) => n + c, 0);
}

/** Names of the session's blobs its log refers to (`details.fullOutput` of tool results). */
export function blobNamesIn(events: readonly FleetEvent[]): string[] {
  const names: string[] = [];
  for (const e of events) {
    if (e.type !== "tool_execution_end") continue;
    const ref = (e.result.details as { fullOutput?: { name?: string } } | undefined)?.fullOutput;
    if (typeof ref?.name === "string") names.push(ref.name);
  }
  return names;
}

/** Whether object store `fleet_blobs` holds anything of `name` (its meta record or its chunks). */
export async function blobExists(client: FleetClient, name: string): Promise<boolean> {
  const bucket = OBJECT_STORES.blobs.name;
  const meta = `$O.${bucket}.M.${Base64UrlPaddedCodec.encode(name)}`;
  return (await messagesOn(client, `OBJ_${bucket}`, meta)) > 0;
}

/** Whether KV `fleet_spend` holds anything (value or marker) under `key`. */
export async function spendKeyExists(client: FleetClient, key: string): Promise<boolean> {
  const bucket = KV_BUCKETS.spend.name;
  return (await messagesOn(client, `KV_${bucket}`, `$KV.${bucket}.${key}`)) > 0;
}

/** The tenant's ledger of a day, or undefined. */
export async function ledgerOf(client: FleetClient, day: string): Promise<LedgerRecord | undefined> {
  const bucket = KV_BUCKETS.budgets.name;
  const msg = await client.jsm.direct.getMessage(`KV_${bucket}`, {
    last_by_subj: `$KV.${bucket}.${BUDGET_KEYS.ledger(day)}`,
  });
  if (!msg || msg.data.length === 0) return undefined;
  return LedgerRecord.parse(JSON.parse(new TextDecoder().decode(msg.data)));
}

/**
 * Everything of a session outside its lifecycle record: its events, tool results, spend records,
 * blobs, projection (the store's answer) and workspace. Each count is 0 once it is deleted.
 */
export async function leftovers(
  client: FleetClient,
  sessionId: string,
  opts: { days: readonly string[]; blobs: readonly string[]; workspace?: string },
) {
  const tree = await client.getTree(sessionId).then(
    () => "present",
    (err: { code?: string }) => err.code ?? "error",
  );
  let blobs = 0;
  for (const name of opts.blobs) if (await blobExists(client, name)) blobs++;
  let spendKeys = 0;
  for (const day of opts.days) if (await spendKeyExists(client, SPEND_KEYS.session(day, sessionId))) spendKeys++;
  return {
    events: await messagesOn(client, STREAMS.events.name, client.eventSubject(sessionId)),
    toolResults: await messagesOn(client, STREAMS.toolResults.name, subjects.toolResultsOfSession(sessionId)),
    spendKeys,
    blobs,
    projection: tree,
    workspace: opts.workspace !== undefined && existsSync(join(opts.workspace, sessionId)),
  };
}

export const NOTHING_LEFT = {
  events: 0,
  toolResults: 0,
  spendKeys: 0,
  blobs: 0,
  projection: "not_found",
  workspace: false,
} as const;

/** Polls `read` until it equals `expected` (deep), or fails with the last value. */
export async function eventually<T>(read: () => Promise<T>, expected: T, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (JSON.stringify(last) !== JSON.stringify(expected) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    last = await read();
  }
  return last;
}

/**
 * The session's spend of `day` once its record in `fleet_spend` counts all of `events` (the record
 * is written a moment after the event it counts): the fold's spend of the day, or the record as it
 * is after 20 s.
 */
export async function countedSpend(client: FleetClient, sessionId: string, events: readonly FleetEvent[], day: string) {
  const folded = foldSessionEvents(events).spend.days.get(day);
  const wanted = folded && { ...folded };
  return eventually(async () => (await client.tenantBudget(day)).sessions.get(sessionId), wanted);
}

/**
 * Starts a run whose LLM answer never ends (the fake stalls after a few events) and resolves once
 * the session streams; `send` sends the prompt (default: the SDK's).
 */
export async function startEndlessRun(
  stack: GatewayStack,
  sessionId: string,
  send: () => Promise<unknown> = () => stack.client.prompt(sessionId, "go on forever"),
): Promise<void> {
  stack.fake.script(fakeReply([fakeText("an answer that never ends")], { stallAfterEvents: 3 }));
  await send();
  const live = await stack.client.state(sessionId);
  try {
    await live.waitFor((v) => v.agent.isStreaming, 20_000);
  } finally {
    live.close();
  }
}
