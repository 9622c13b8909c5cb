/**
 * Queries answered from the namespace's indexes (PROTOCOL change 44): `list_running`,
 * `list_approvals`, `search_sessions`. Each index is split in `STORE_SHARDS` shards (keys.ts): a
 * query reads the range it answers with from every shard (in parallel) and merges, then reads the
 * sessions of its answer, so its cost follows shards × page size plus the answer, never the number
 * of sessions in the store.
 */
import { PendingApproval, parseAgentRef, type SessionSummary } from "@fleet/protocol";
import { z } from "zod";
import { ALL_SHARDS, indexKeys, sessionKeys } from "./keys.js";
import type { RedisClient } from "./redis-client.js";
import { normalizeSearchText, sessionOfMember } from "./search-terms.js";
import type { ListResult } from "./session-index.js";

export type ApprovalsResult = { ok: true; approvals: PendingApproval[] } | { ok: false; error: string };

/** A cursor of these queries: the last index member read, base64url. */
const encodeMember = (member: string) => Buffer.from(member, "utf8").toString("base64url");
const decodeMember = (cursor: string): string | null => {
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  return text.length > 0 && encodeMember(text) === cursor ? text : null;
};

/** Summaries of these sessions in this order; a session gone meanwhile is left out. */
export async function summariesOf(
  redis: RedisClient,
  prefix: string,
  ns: string,
  sessionIds: readonly string[],
): Promise<SessionSummary[]> {
  const metas = await metaFieldsOf(redis, prefix, ns, sessionIds);
  const out: SessionSummary[] = [];
  sessionIds.forEach((sessionId, i) => {
    const summary = summaryOf(sessionId, metas[i] ?? [], 0);
    if (summary) out.push(summary);
  });
  return out;
}

/**
 * The meta fields `name, status, updatedAt, lastSeq, agent` of each session, in order ([] for one
 * that could not be read). One command per session, sent together (the client pipelines them, per
 * node in a cluster).
 */
export function metaFieldsOf(
  redis: RedisClient,
  prefix: string,
  ns: string,
  sessionIds: readonly string[],
): Promise<Array<Array<string | null>>> {
  return Promise.all(
    sessionIds.map((sid) =>
      redis
        .hmget(sessionKeys(prefix, ns, sid).meta, "name", "status", "updatedAt", "lastSeq", "agent")
        .catch(() => [] as Array<string | null>),
    ),
  );
}

/** Orders index members as Redis does (bytewise), for merging shards' lexicographic ranges. */
export const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * A summary from the meta fields `name, status, updatedAt, lastSeq, agent` (in that order), or
 * undefined when the session is gone (no lastSeq).
 */
export function summaryOf(
  sessionId: string,
  [name, status, updatedAt, lastSeq, agent]: ReadonlyArray<string | null | undefined>,
  fallbackUpdatedAt: number,
): SessionSummary | undefined {
  if (lastSeq === null || lastSeq === undefined) return undefined;
  const ref = agent ? parseAgentRef(agent) : undefined;
  return {
    sessionId,
    name: nameOf(name),
    status: status === "running" ? "running" : "idle",
    updatedAt: Number(updatedAt ?? fallbackUpdatedAt),
    seq: Number(lastSeq),
    ...(ref?.version !== undefined ? { agent: { name: ref.name, version: ref.version } } : {}),
  };
}

/** Sessions per agent version, from the agents index (every agent's, or `name`'s); by name, then version. */
export async function countAgentSessions(
  redis: RedisClient,
  prefix: string,
  ns: string,
  name: string | undefined,
): Promise<Array<{ name: string; version: number; sessions: number }>> {
  const shards = await Promise.all(ALL_SHARDS.map((k) => redis.hgetall(indexKeys(prefix, ns, k).agents)));
  const totals = new Map<string, number>();
  for (const flat of shards) {
    for (const [member, count] of Object.entries(flat)) totals.set(member, (totals.get(member) ?? 0) + Number(count));
  }
  const out: Array<{ name: string; version: number; sessions: number }> = [];
  for (const [member, sessions] of totals) {
    const ref = parseAgentRef(member);
    if (!ref || ref.version === undefined || !(sessions > 0)) continue;
    if (name !== undefined && ref.name !== name) continue;
    out.push({ name: ref.name, version: ref.version, sessions });
  }
  return out.sort((a, b) => (a.name === b.name ? a.version - b.version : a.name < b.name ? -1 : 1));
}

const StoredName = z.string().nullable();
function nameOf(text: string | null | undefined): string | null {
  try {
    const parsed = StoredName.safeParse(JSON.parse(text ?? "null"));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** One page of the sessions with an open run, by session id. */
export async function listRunning(
  redis: RedisClient,
  prefix: string,
  ns: string,
  opts: { limit: number; cursor?: string | undefined },
): Promise<ListResult> {
  const after = opts.cursor === undefined ? null : decodeMember(opts.cursor);
  if (opts.cursor !== undefined && after === null) return { ok: false, error: "invalid cursor" };
  const perShard = await Promise.all(
    ALL_SHARDS.map((k) =>
      redis.zrange(
        indexKeys(prefix, ns, k).running,
        after === null ? "-" : `(${after}`,
        "+",
        "BYLEX",
        "LIMIT",
        0,
        opts.limit + 1,
      ),
    ),
  );
  const ids = perShard
    .flat()
    .sort(byteOrder)
    .slice(0, opts.limit + 1);
  const page = ids.slice(0, opts.limit);
  const sessions = await summariesOf(redis, prefix, ns, page);
  const last = page.at(-1);
  return ids.length > opts.limit && last !== undefined
    ? { ok: true, sessions, cursor: encodeMember(last) }
    : { ok: true, sessions };
}

/** Pending approvals of one session, or of every session with one; oldest request first. */
export async function listApprovals(
  redis: RedisClient,
  prefix: string,
  ns: string,
  opts: { sessionId?: string | undefined },
): Promise<ApprovalsResult> {
  const ids =
    opts.sessionId !== undefined
      ? [opts.sessionId]
      : (await Promise.all(ALL_SHARDS.map((k) => redis.zrange(indexKeys(prefix, ns, k).approvals, 0, -1)))).flat();
  if (ids.length === 0) return { ok: true, approvals: [] };
  const replies = await Promise.all(
    ids.map((sid) =>
      redis.hvals(sessionKeys(prefix, ns, sid).approvals).then(
        (values) => ({ values }),
        (err: Error) => ({ error: err.message }),
      ),
    ),
  );
  const approvals: PendingApproval[] = [];
  for (const reply of replies) {
    if ("error" in reply) return { ok: false, error: reply.error };
    for (const text of reply.values) {
      let parsed: ReturnType<typeof PendingApproval.safeParse>;
      try {
        parsed = PendingApproval.safeParse(JSON.parse(text));
      } catch {
        return { ok: false, error: "a stored approval is not JSON; run verify" };
      }
      if (!parsed.success)
        return { ok: false, error: `a stored approval is invalid (${parsed.error.message}); run verify` };
      approvals.push(parsed.data);
    }
  }
  approvals.sort((a, b) => a.requestedAt - b.requestedAt || a.seq - b.seq);
  return { ok: true, approvals };
}

/** Members read per index round trip of a search, as a multiple of the page's limit. */
const SEARCH_READ_FACTOR = 2;

/**
 * Sessions with an id, name word or label starting with `q`, by matched text. Each shard's index is
 * read from the cursor on, in chunks of `2 × limit` members, until it yields `limit + 1` distinct
 * sessions or its range ends (a session's members all live in its shard); the shards' members are
 * merged in index order and walked until `limit` distinct sessions are found. The cursor is the
 * last member taken, so the next page starts right after it.
 */
export async function searchSessions(
  redis: RedisClient,
  prefix: string,
  ns: string,
  opts: { q: string; limit: number; cursor?: string | undefined },
): Promise<ListResult> {
  const needle = normalizeSearchText(opts.q);
  if (needle === "") return { ok: false, error: "q must hold a letter, digit or sign" };
  const after = opts.cursor === undefined ? null : decodeMember(opts.cursor);
  if (opts.cursor !== undefined && (after === null || !after.startsWith(needle))) {
    return { ok: false, error: "invalid cursor" };
  }
  const range = { needle, after, sessions: opts.limit + 1, chunk: opts.limit * SEARCH_READ_FACTOR };
  const members = (await Promise.all(ALL_SHARDS.map((k) => searchShard(redis, indexKeys(prefix, ns, k).search, range))))
    .flat()
    .sort(byteOrder);
  const picked: string[] = [];
  const seen = new Set<string>();
  let lastTaken: string | null = null;
  let more = false;
  for (const member of members) {
    if (picked.length >= opts.limit) {
      more = true;
      break;
    }
    lastTaken = member;
    const sid = sessionOfMember(member);
    if (sid === null || seen.has(sid)) continue;
    seen.add(sid);
    picked.push(sid);
  }
  const sessions = await summariesOf(redis, prefix, ns, picked);
  return more && lastTaken !== null ? { ok: true, sessions, cursor: encodeMember(lastTaken) } : { ok: true, sessions };
}

/** One shard's members after `after` starting with `needle`, until `sessions` distinct sessions or the end. */
async function searchShard(
  redis: RedisClient,
  key: string,
  range: { needle: string; after: string | null; sessions: number; chunk: number },
): Promise<string[]> {
  // UTF-8 never holds byte 0xff, so every member starting with the needle sorts below needle + 0xff.
  const max = Buffer.concat([Buffer.from(`(${range.needle}`, "utf8"), Buffer.from([0xff])]);
  const out: string[] = [];
  const seen = new Set<string>();
  let from = range.after === null ? `[${range.needle}` : `(${range.after}`;
  for (;;) {
    const members = await redis.zrange(key, from, max, "BYLEX", "LIMIT", 0, range.chunk);
    for (const member of members) {
      const sid = sessionOfMember(member);
      if (sid !== null && !seen.has(sid)) {
        if (seen.size >= range.sessions) return out;
        seen.add(sid);
      }
      out.push(member);
    }
    if (members.length < range.chunk) return out;
    from = `(${members.at(-1) as string}`;
  }
}
