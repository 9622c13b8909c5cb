/**
 * Redis key layout. Every key of a session carries the `{sessionId}` hash tag, so all of them live in
 * one Redis Cluster slot and one Lua script can update them atomically. Keys are grouped under a
 * namespace (`<prefix>:<ns>:…`); `rebuild` fills a fresh namespace and then switches the control key.
 *
 * - `<prefix>:ctl` (hash, global): `ns` = the active namespace, `startSeq` = the stream sequence from
 *   which projectors must (re)consume into it, `switchedAt`.
 * - `<prefix>:<ns>:{<sid>}:meta` (hash): lastSeq, updatedAt, createdAt, status, leaf, name, model,
 *   thinking, tools, config, forkedFrom, sid (JSON-encoded where nullable), agent (`name@version`
 *   or empty).
 * - `…:{<sid>}:entries` (list): the entries in creation (log) order, one JSON string each.
 * - `…:{<sid>}:pos` (hash): entry id → index in `entries`.
 * - `…:{<sid>}:labels` (hash): target entry id → label.
 * - `…:{<sid>}:leafev` (list): ids of the `leaf` events applied (the reducer's idempotence record).
 * - `…:{<sid>}:approvals` (hash): tool call id → pending approval (JSON), the session's
 *   `foldPendingApprovals`.
 * - `…:{<sid>}:terms` (set): the members this session has in the search index (so a removal or a
 *   rename takes exactly those out).
 * - `<prefix>:<ns>:sessions` (zset, global): sessionId scored by updatedAt (most recent first on read).
 * - `<prefix>:<ns>:idx:running` (zset, global, scores 0): sessions with an open run, by id.
 * - `<prefix>:<ns>:idx:approvals` (zset, global): sessions with a pending approval, scored by the
 *   oldest request's `meta.ts`.
 * - `<prefix>:<ns>:idx:search` (zset, global, scores 0): `<text>\0<kind>\0<sid>` per searchable
 *   text of a session (lower-cased id and name, each from every word on; labels); read by lexicographic range.
 * - `<prefix>:<ns>:idx:agents` (hash, global): `<agent>@<version>` → how many sessions run that
 *   agent version (each session's meta `agent` field says which; PROTOCOL change 54).
 * - `<prefix>:<ns>:indexes` (string, global): the index layout version the namespace was built with.
 *   The three `idx:` keys and the per-session `approvals` and `terms` are written by the same Lua
 *   script as the session's other keys (PROTOCOL change 44).
 * - `<prefix>:<ns>:applied` (hash, global): partition → highest stream sequence applied in it.
 * - `<prefix>:<ns>:reset` (hash, global): partition → "1" once its durable consumer was moved to
 *   this namespace's `startSeq`.
 * - `<prefix>:<ns>:born` (string, global): written before a build's first write; `ctl` switches to
 *   the namespace only while it exists, so a namespace flushed mid-build never becomes active.
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
export const namespaceBase = (prefix: string, ns: string) => `${prefix}:${ns}`;

export function sessionKeys(prefix: string, ns: string, sessionId: string): SessionKeys {
  const base = `${prefix}:${ns}:{${sessionId}}`;
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

/** The global index keys of a namespace. */
export interface IndexKeys {
  running: string;
  approvals: string;
  search: string;
  agents: string;
}

export const indexKeys = (prefix: string, ns: string): IndexKeys => ({
  running: `${prefix}:${ns}:idx:running`,
  approvals: `${prefix}:${ns}:idx:approvals`,
  search: `${prefix}:${ns}:idx:search`,
  agents: `${prefix}:${ns}:idx:agents`,
});
export const indexVersionKey = (prefix: string, ns: string) => `${prefix}:${ns}:indexes`;
/** The index layout this code writes; a namespace with another (or none) is rebuilt at start. */
export const INDEX_VERSION = "2";

export const sessionsIndexKey = (prefix: string, ns: string) => `${prefix}:${ns}:sessions`;
export const appliedKey = (prefix: string, ns: string) => `${prefix}:${ns}:applied`;
export const resetKey = (prefix: string, ns: string) => `${prefix}:${ns}:reset`;
export const bornKey = (prefix: string, ns: string) => `${prefix}:${ns}:born`;

/** Every key of a namespace matches this SCAN pattern (used to drop old and scratch namespaces). */
export const namespacePattern = (prefix: string, ns: string) => `${escapeGlob(prefix)}:${escapeGlob(ns)}:*`;

function escapeGlob(s: string): string {
  return s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
