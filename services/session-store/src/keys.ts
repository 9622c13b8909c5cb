/**
 * Redis key layout (layout version 3). Keys are grouped under a namespace (`<prefix>:<ns>:…`); `rebuild`
 * fills a fresh namespace and then switches the control key. Every session belongs to one of
 * `STORE_SHARDS` shards, `k = shardOf(sessionId)`; the session's keys and its shard's index keys carry
 * the hash tag `{s<k>}`, so they live in one Redis Cluster slot and one Lua script updates a session
 * and its index entries atomically on a single Redis and on a cluster alike. Readers of an index read
 * every shard and merge (`index-queries.ts`, `session-index.ts`).
 *
 * - `<prefix>:ctl` (hash, global): `ns` = the active namespace, `startSeq` = the stream sequence from
 *   which projectors must (re)consume into it, `switchedAt`.
 * - `{<prefix>:ctl}:born:<ns>` (string): written before a build's first write; `ctl` switches to the
 *   namespace only while it exists (same slot as `ctl`), so a namespace flushed mid-build never
 *   becomes active.
 * - `<prefix>:<ns>:{s<k>}:s:<sid>:meta` (hash): lastSeq, updatedAt, createdAt, status, leaf, name,
 *   model, thinking, tools, config, forkedFrom, sid (JSON-encoded where nullable), agent
 *   (`name@version` or empty).
 * - `…:s:<sid>:entries` (list): the entries in creation (log) order, one JSON string each.
 * - `…:s:<sid>:pos` (hash): entry id → index in `entries`.
 * - `…:s:<sid>:labels` (hash): target entry id → label.
 * - `…:s:<sid>:leafev` (list): ids of the `leaf` events applied (the reducer's idempotence record).
 * - `…:s:<sid>:approvals` (hash): tool call id → pending approval (JSON), `foldPendingApprovals`.
 * - `…:s:<sid>:terms` (set): the members this session has in its shard's search index.
 * - `<prefix>:<ns>:{s<k>}:sessions` (zset): the shard's sessionIds scored by updatedAt.
 * - `<prefix>:<ns>:{s<k>}:idx:running` (zset, scores 0): the shard's sessions with an open run.
 * - `<prefix>:<ns>:{s<k>}:idx:approvals` (zset): the shard's sessions with a pending approval, scored
 *   by the oldest request's `meta.ts`.
 * - `<prefix>:<ns>:{s<k>}:idx:search` (zset, scores 0): `<text>\0<kind>\0<sid>` per searchable text.
 * - `<prefix>:<ns>:{s<k>}:idx:agents` (hash): `<agent>@<version>` → sessions of the shard that run it.
 * - `<prefix>:<ns>:indexes` (string): the layout version the namespace was built with.
 * - `<prefix>:<ns>:applied` (hash): partition → highest stream sequence applied in it.
 * - `<prefix>:<ns>:reset` (hash): `g<g>` → "1" once group g's consumer was moved to `startSeq`.
 * Session ids match `^[A-Za-z0-9_-]+$` (no `:`), so `s:<sid>:…`, `idx:…` and `sessions` never meet.
 */
export interface SessionKeys {
  meta: string;
  entries: string;
  pos: string;
  labels: string;
  leafEvents: string;
  approvals: string;
  terms: string;
}

export const controlKey = (prefix: string) => `${prefix}:ctl`;
export const rebuildLockKey = (prefix: string) => `${prefix}:lock:rebuild`;
/** A shared rebuild (group-build.ts): the namespace being built, group g's build lease, the groups built. */
export const buildKey = (prefix: string) => `${prefix}:build`;
export const groupBuildLockKey = (prefix: string, group: number) => `${prefix}:lock:rebuild:g${group}`;
export const builtKey = (prefix: string, ns: string) => `${prefix}:${ns}:built`;
export const namespaceBase = (prefix: string, ns: string) => `${prefix}:${ns}`;

/** Shards of a namespace. Part of the layout: changing it needs a new `INDEX_VERSION`. */
export const STORE_SHARDS = 16;

/** The shard of a session: FNV-1a (32 bit) of its id's UTF-16 code units, mod `STORE_SHARDS`. */
export function shardOf(sessionId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < sessionId.length; i++) {
    h ^= sessionId.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % STORE_SHARDS;
}

/** Every shard number, 0 … STORE_SHARDS − 1. */
export const ALL_SHARDS: readonly number[] = Array.from({ length: STORE_SHARDS }, (_, k) => k);

/** `<prefix>:<ns>:{s<k>}`: the base of shard k's keys (its hash tag `{s<k>}`). */
const shardBase = (prefix: string, ns: string, shard: number) => `${prefix}:${ns}:{s${shard}}`;

/** `<prefix>:<ns>:{s<k>}:s:`: a session's keys of shard k are this, its id, `:` and the field. */
export const sessionKeyBase = (prefix: string, ns: string, shard: number) => `${shardBase(prefix, ns, shard)}:s:`;

export function sessionKeys(prefix: string, ns: string, sessionId: string): SessionKeys {
  const base = `${sessionKeyBase(prefix, ns, shardOf(sessionId))}${sessionId}`;
  return {
    meta: `${base}:meta`,
    entries: `${base}:entries`,
    pos: `${base}:pos`,
    labels: `${base}:labels`,
    leafEvents: `${base}:leafev`,
    approvals: `${base}:approvals`,
    terms: `${base}:terms`,
  };
}

/** The index keys of one shard of a namespace. */
export interface IndexKeys {
  sessions: string;
  running: string;
  approvals: string;
  search: string;
  agents: string;
}

export function indexKeys(prefix: string, ns: string, shard: number): IndexKeys {
  const base = shardBase(prefix, ns, shard);
  return {
    sessions: `${base}:sessions`,
    running: `${base}:idx:running`,
    approvals: `${base}:idx:approvals`,
    search: `${base}:idx:search`,
    agents: `${base}:idx:agents`,
  };
}

/** The index keys of the shard holding `sessionId`. */
export const indexKeysOf = (prefix: string, ns: string, sessionId: string): IndexKeys =>
  indexKeys(prefix, ns, shardOf(sessionId));
export const indexVersionKey = (prefix: string, ns: string) => `${prefix}:${ns}:indexes`;
/** The index layout this code writes; a namespace with another (or none) is rebuilt at start. */
export const INDEX_VERSION = "3";

export const appliedKey = (prefix: string, ns: string) => `${prefix}:${ns}:applied`;
export const resetKey = (prefix: string, ns: string) => `${prefix}:${ns}:reset`;
export const bornKey = (prefix: string, ns: string) => `{${controlKey(prefix)}}:born:${ns}`;

/** Every key of a namespace but its birth marker matches this SCAN pattern (used to drop namespaces). */
export const namespacePattern = (prefix: string, ns: string) => `${escapeGlob(prefix)}:${escapeGlob(ns)}:*`;

/** Every session key of a namespace (`<prefix>:<ns>:{s<k>}:s:<sid>:<field>`) matches this SCAN pattern. */
export const sessionKeysPattern = (prefix: string, ns: string) => `${escapeGlob(prefix)}:${escapeGlob(ns)}:{s*}:s:*`;

function escapeGlob(s: string): string {
  return s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
