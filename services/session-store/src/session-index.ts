import type { SessionSummary } from "@fleet/protocol";
import { z } from "zod";
import { metaFieldsOf, summaryOf } from "./index-queries.js";
import { ALL_SHARDS, indexKeys } from "./keys.js";
import type { RedisClient } from "./redis-client.js";

/**
 * Cursor of `list_sessions`: the (updatedAt, sessionId) of the last session returned, base64url JSON.
 * Order: updatedAt descending, then sessionId descending (Redis' reverse order for equal scores).
 */
const CursorValue = z.tuple([z.number().int().nonnegative(), z.string().min(1)]);

export function encodeCursor(updatedAt: number, sessionId: string): string {
  return Buffer.from(JSON.stringify([updatedAt, sessionId])).toString("base64url");
}

export function decodeCursor(cursor: string): { updatedAt: number; sessionId: string } | null {
  try {
    const parsed = CursorValue.safeParse(JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")));
    return parsed.success ? { updatedAt: parsed.data[0], sessionId: parsed.data[1] } : null;
  } catch {
    return null;
  }
}

export type ListResult = { ok: true; sessions: SessionSummary[]; cursor?: string } | { ok: false; error: string };

interface Row {
  sessionId: string;
  score: number;
}

/** Most recently updated first; equal scores by sessionId descending (bytewise, as Redis orders them). */
const newestFirst = (a: Row, b: Row) =>
  b.score - a.score || Buffer.compare(Buffer.from(b.sessionId), Buffer.from(a.sessionId));

/**
 * One page of the sessions index, most recently updated first: the first `limit + 1` rows after the
 * cursor of every shard, merged.
 */
export async function listSessions(
  redis: RedisClient,
  prefix: string,
  ns: string,
  opts: { limit: number; cursor?: string | undefined },
): Promise<ListResult> {
  const after = opts.cursor === undefined ? null : decodeCursor(opts.cursor);
  if (opts.cursor !== undefined && !after) return { ok: false, error: "invalid cursor" };
  const page = opts.limit + 1;
  const perShard = await Promise.all(
    ALL_SHARDS.map((k) => newestAfter(redis, indexKeys(prefix, ns, k).sessions, after, page)),
  );
  const picked = perShard.flat().sort(newestFirst).slice(0, page);
  const more = picked.length > opts.limit;
  const rows = picked.slice(0, opts.limit);
  const metas = await metaFieldsOf(
    redis,
    prefix,
    ns,
    rows.map((row) => row.sessionId),
  );
  const sessions: SessionSummary[] = [];
  rows.forEach((row, i) => {
    const summary = summaryOf(row.sessionId, metas[i] ?? [], row.score);
    if (summary) sessions.push(summary);
  });
  const last = rows.at(-1);
  return more && last
    ? { ok: true, sessions, cursor: encodeCursor(last.score, last.sessionId) }
    : { ok: true, sessions };
}

/** The first `page` rows of one shard's index after the cursor, newest first. */
async function newestAfter(
  redis: RedisClient,
  key: string,
  after: { updatedAt: number; sessionId: string } | null,
  page: number,
): Promise<Row[]> {
  const picked: Row[] = [];
  let offset = 0;
  // Ties with the cursor's score are skipped member by member; everything else is one range read.
  while (picked.length < page) {
    const max = after ? String(after.updatedAt) : "+inf";
    const flat = await redis.zrange(key, max, "-inf", "BYSCORE", "REV", "LIMIT", offset, page * 2, "WITHSCORES");
    if (flat.length === 0) break;
    offset += flat.length / 2;
    for (let i = 0; i + 1 < flat.length && picked.length < page; i += 2) {
      const sessionId = flat[i] as string;
      const score = Number(flat[i + 1]);
      if (after && score === after.updatedAt && sessionId >= after.sessionId) continue;
      picked.push({ sessionId, score });
    }
    if (flat.length / 2 < page * 2) break;
  }
  return picked;
}

/**
 * One page of sessions not running whose last update is before `before`, the least recently updated
 * first (ascending updatedAt, then sessionId). Reads at most `limit * 4` index entries per page, so a
 * run of running sessions costs a short page with a cursor, never a long scan.
 */
export async function listIdleSessions(
  redis: RedisClient,
  prefix: string,
  ns: string,
  opts: { before: number; limit: number; cursor?: string | undefined },
): Promise<ListResult> {
  const after = opts.cursor === undefined ? null : decodeCursor(opts.cursor);
  if (opts.cursor !== undefined && !after) return { ok: false, error: "invalid cursor" };
  const scan = opts.limit * 4;
  const min = after ? String(after.updatedAt) : "-inf";
  const perShard = await Promise.all(
    ALL_SHARDS.map(async (k) => {
      const flat = await redis.zrange(
        indexKeys(prefix, ns, k).sessions,
        min,
        `(${opts.before}`,
        "BYSCORE",
        "LIMIT",
        0,
        scan + 1,
        "WITHSCORES",
      );
      const shardRows: Row[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const sessionId = flat[i] as string;
        const score = Number(flat[i + 1]);
        if (after && score === after.updatedAt && sessionId <= after.sessionId) continue;
        shardRows.push({ sessionId, score });
      }
      return shardRows;
    }),
  );
  const rows = perShard
    .flat()
    .sort((a, b) => newestFirst(b, a))
    .slice(0, scan + 1);
  const scanned = rows.slice(0, scan);
  const metas = await metaFieldsOf(
    redis,
    prefix,
    ns,
    scanned.map((row) => row.sessionId),
  );
  const sessions: SessionSummary[] = [];
  let last: Row | undefined;
  for (const [i, row] of scanned.entries()) {
    if (sessions.length >= opts.limit) break;
    last = row;
    const summary = summaryOf(row.sessionId, metas[i] ?? [], row.score);
    if (summary && summary.status !== "running") sessions.push(summary);
  }
  const more = rows.length > scan || (last !== undefined && last !== scanned.at(-1));
  return more && last
    ? { ok: true, sessions, cursor: encodeCursor(last.score, last.sessionId) }
    : { ok: true, sessions };
}
