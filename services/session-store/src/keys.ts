/**
 * Redis key layout. Every key of a session carries the `{sessionId}` hash tag, so all of them live in
 * one Redis Cluster slot and one Lua script can update them atomically. Keys are grouped under a
 * namespace (`<prefix>:<ns>:…`); `rebuild` fills a fresh namespace and then switches the control key.
 *
 * - `<prefix>:ctl` (hash, global): `ns` = the active namespace, `startSeq` = the stream sequence from
 *   which projectors must (re)consume into it, `switchedAt`.
 * - `<prefix>:<ns>:{<sid>}:meta` (hash): lastSeq, updatedAt, createdAt, status, leaf, name, model,
 *   thinking, tools, config, forkedFrom, sid (JSON-encoded where nullable).
 * - `…:{<sid>}:entries` (list): the entries in creation (log) order, one JSON string each.
 * - `…:{<sid>}:pos` (hash): entry id → index in `entries`.
 * - `…:{<sid>}:labels` (hash): target entry id → label.
 * - `…:{<sid>}:leafev` (list): ids of the `leaf` events applied (the reducer's idempotence record).
 * - `<prefix>:<ns>:sessions` (zset, global): sessionId scored by updatedAt (most recent first on read).
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
  };
}

export const sessionsIndexKey = (prefix: string, ns: string) => `${prefix}:${ns}:sessions`;
export const appliedKey = (prefix: string, ns: string) => `${prefix}:${ns}:applied`;
export const resetKey = (prefix: string, ns: string) => `${prefix}:${ns}:reset`;
export const bornKey = (prefix: string, ns: string) => `${prefix}:${ns}:born`;

/** Every key of a namespace matches this SCAN pattern (used to drop old and scratch namespaces). */
export const namespacePattern = (prefix: string, ns: string) => `${escapeGlob(prefix)}:${escapeGlob(ns)}:*`;

function escapeGlob(s: string): string {
  return s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
