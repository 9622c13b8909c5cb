/**
 * Queries answered from the namespace's indexes (PROTOCOL change 44): `list_running`,
 * `list_approvals`, `search_sessions`. Each reads the index range it answers with and then the
 * sessions of its answer, so its cost follows the size of the answer, never the number of sessions
 * in the store.
 */
import { PendingApproval, parseAgentRef, type SessionSummary } from "@fleet/protocol";
import type { Redis } from "ioredis";
import { z } from "zod";
import { indexKeys, sessionKeys } from "./keys.js";
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
  redis: Redis,
  prefix: string,
  ns: string,
  sessionIds: readonly string[],
): Promise<SessionSummary[]> {
  if (sessionIds.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const sid of sessionIds)
    pipeline.hmget(sessionKeys(prefix, ns, sid).meta, "name", "status", "updatedAt", "lastSeq", "agent");
  const replies = (await pipeline.exec()) ?? [];
  const out: SessionSummary[] = [];
  sessionIds.forEach((sessionId, i) => {
    const [err, value] = replies[i] ?? [null, null];
    const fields = !err && Array.isArray(value) ? (value as Array<string | null>) : [];
    const summary = summaryOf(sessionId, fields, 0);
    if (summary) out.push(summary);
  });
  return out;
}

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
  redis: Redis,
  prefix: string,
  ns: string,
  name: string | undefined,
): Promise<Array<{ name: string; version: number; sessions: number }>> {
  const flat = await redis.hgetall(indexKeys(prefix, ns).agents);
  const out: Array<{ name: string; version: number; sessions: number }> = [];
  for (const [member, count] of Object.entries(flat)) {
    const ref = parseAgentRef(member);
    const sessions = Number(count);
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
  redis: Redis,
  prefix: string,
  ns: string,
  opts: { limit: number; cursor?: string | undefined },
): Promise<ListResult> {
  const after = opts.cursor === undefined ? null : decodeMember(opts.cursor);
  if (opts.cursor !== undefined && after === null) return { ok: false, error: "invalid cursor" };
  const ids = await redis.zrange(
    indexKeys(prefix, ns).running,
    after === null ? "-" : `(${after}`,
    "+",
    "BYLEX",
    "LIMIT",
    0,
    opts.limit + 1,
  );
  const page = ids.slice(0, opts.limit);
  const sessions = await summariesOf(redis, prefix, ns, page);
  const last = page.at(-1);
  return ids.length > opts.limit && last !== undefined
    ? { ok: true, sessions, cursor: encodeMember(last) }
    : { ok: true, sessions };
}

/** Pending approvals of one session, or of every session with one; oldest request first. */
export async function listApprovals(
  redis: Redis,
  prefix: string,
  ns: string,
  opts: { sessionId?: string | undefined },
): Promise<ApprovalsResult> {
  const ids =
    opts.sessionId !== undefined ? [opts.sessionId] : await redis.zrange(indexKeys(prefix, ns).approvals, 0, -1);
  if (ids.length === 0) return { ok: true, approvals: [] };
  const pipeline = redis.pipeline();
  for (const sid of ids) pipeline.hvals(sessionKeys(prefix, ns, sid).approvals);
  const replies = (await pipeline.exec()) ?? [];
  const approvals: PendingApproval[] = [];
  for (const [err, values] of replies) {
    if (err) return { ok: false, error: err.message };
    for (const text of values as string[]) {
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
 * Sessions with an id, name word or label starting with `q`, by matched text. Reads the index in
 * chunks of `2 × limit` members until `limit` distinct sessions are found or the range ends; the
 * cursor is the last member taken, so the next page starts right after it.
 */
export async function searchSessions(
  redis: Redis,
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
  // UTF-8 never holds byte 0xff, so every member starting with the needle sorts below needle + 0xff.
  const max = Buffer.concat([Buffer.from(`(${needle}`, "utf8"), Buffer.from([0xff])]);
  const key = indexKeys(prefix, ns).search;
  const picked: string[] = [];
  const seen = new Set<string>();
  let from = after === null ? `[${needle}` : `(${after}`;
  let lastTaken: string | null = null;
  let more = false;
  const chunk = opts.limit * SEARCH_READ_FACTOR;
  for (;;) {
    const members = await redis.zrange(key, from, max, "BYLEX", "LIMIT", 0, chunk);
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
    if (more || members.length < chunk) break;
    from = `(${members.at(-1) as string}`;
  }
  const sessions = await summariesOf(redis, prefix, ns, picked);
  return more && lastTaken !== null ? { ok: true, sessions, cursor: encodeMember(lastTaken) } : { ok: true, sessions };
}
