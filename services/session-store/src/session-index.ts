import type { SessionSummary } from "@fleet/protocol";
import type { Redis } from "ioredis";
import { z } from "zod";
import { summaryOf } from "./index-queries.js";
import { sessionKeys, sessionsIndexKey } from "./keys.js";

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

/** One page of the global index, most recently updated first. */
export async function listSessions(
  redis: Redis,
  prefix: string,
  ns: string,
  opts: { limit: number; cursor?: string | undefined },
): Promise<ListResult> {
  const after = opts.cursor === undefined ? null : decodeCursor(opts.cursor);
  if (opts.cursor !== undefined && !after) return { ok: false, error: "invalid cursor" };
  const key = sessionsIndexKey(prefix, ns);
  const picked: Array<{ sessionId: string; score: number }> = [];
  const page = opts.limit + 1;
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
  const more = picked.length > opts.limit;
  const rows = picked.slice(0, opts.limit);
  const pipeline = redis.pipeline();
  for (const row of rows) {
    pipeline.hmget(sessionKeys(prefix, ns, row.sessionId).meta, "name", "status", "updatedAt", "lastSeq", "agent");
  }
  const replies = rows.length > 0 ? ((await pipeline.exec()) ?? []) : [];
  const sessions: SessionSummary[] = [];
  rows.forEach((row, i) => {
    const [err, value] = replies[i] ?? [null, null];
    const fields = !err && Array.isArray(value) ? (value as Array<string | null>) : [];
    const summary = summaryOf(row.sessionId, fields, row.score);
    if (summary) sessions.push(summary);
  });
  const last = rows.at(-1);
  return more && last
    ? { ok: true, sessions, cursor: encodeCursor(last.score, last.sessionId) }
    : { ok: true, sessions };
}

/**
 * One page of sessions not running whose last update is before `before`, the least recently updated
 * first (ascending updatedAt, then sessionId). Reads at most `limit * 4` index entries per page, so a
 * run of running sessions costs a short page with a cursor, never a long scan.
 */
export async function listIdleSessions(
  redis: Redis,
  prefix: string,
  ns: string,
  opts: { before: number; limit: number; cursor?: string | undefined },
): Promise<ListResult> {
  const after = opts.cursor === undefined ? null : decodeCursor(opts.cursor);
  if (opts.cursor !== undefined && !after) return { ok: false, error: "invalid cursor" };
  const scan = opts.limit * 4;
  const min = after ? String(after.updatedAt) : "-inf";
  const flat = await redis.zrange(
    sessionsIndexKey(prefix, ns),
    min,
    `(${opts.before}`,
    "BYSCORE",
    "LIMIT",
    0,
    scan + 1,
    "WITHSCORES",
  );
  const rows: Array<{ sessionId: string; score: number }> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const sessionId = flat[i] as string;
    const score = Number(flat[i + 1]);
    if (after && score === after.updatedAt && sessionId <= after.sessionId) continue;
    rows.push({ sessionId, score });
  }
  const scanned = rows.slice(0, scan);
  const pipeline = redis.pipeline();
  for (const row of scanned) {
    pipeline.hmget(sessionKeys(prefix, ns, row.sessionId).meta, "name", "status", "updatedAt", "lastSeq", "agent");
  }
  const replies = scanned.length > 0 ? ((await pipeline.exec()) ?? []) : [];
  const sessions: SessionSummary[] = [];
  let last: { sessionId: string; score: number } | undefined;
  for (const [i, row] of scanned.entries()) {
    if (sessions.length >= opts.limit) break;
    last = row;
    const [err, value] = replies[i] ?? [null, null];
    const summary = summaryOf(
      row.sessionId,
      !err && Array.isArray(value) ? (value as Array<string | null>) : [],
      row.score,
    );
    if (summary && summary.status !== "running") sessions.push(summary);
  }
  const more = rows.length > scan || (last !== undefined && last !== scanned.at(-1));
  return more && last
    ? { ok: true, sessions, cursor: encodeCursor(last.score, last.sessionId) }
    : { ok: true, sessions };
}
