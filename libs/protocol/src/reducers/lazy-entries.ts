// A session tree's entry list read back from a snapshot without parsing it (PROTOCOL change 64):
// the entries' JSON lines are kept as bytes and an entry is parsed the first time it is read.
// Pure: no I/O; the bytes are the caller's and are never modified.
import type { SessionEntry } from "../session-entry.js";

/** Entries as JSON lines: entry `i` is `bytes[starts[i], starts[i + 1] - 1)`, each line ending in `\n`. */
export interface EntryLines {
  bytes: Uint8Array;
  /** `count + 1` offsets into `bytes`; the last one is `bytes.byteLength`. */
  starts: Uint32Array;
  /** Each entry's `id`, in order (so an id lookup parses nothing). */
  ids: readonly string[];
}

/** What a lazy list reads its first `lines.ids.length` entries from, shared by its copies. */
interface LazySource {
  lines: EntryLines;
  /** Entries parsed so far (counted for tests and benches). */
  parsed: number;
}

/** The proxy of each lazy list → its source and its own element array (the proxy's target). */
const lazyLists = new WeakMap<readonly SessionEntry[], { source: LazySource; target: (SessionEntry | undefined)[] }>();

const NEWLINE = 0x0a;
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * `entries` as JSON lines, one per entry, each `JSON.stringify(entry)` then `\n` (a JSON text holds
 * no raw newline). The lines of a lazy list's unread part are its stored bytes, copied as they are.
 */
export function encodeEntryLines(entries: readonly SessionEntry[]): Uint8Array {
  const lazy = lazyLists.get(entries);
  const from = lazy ? lazy.source.lines.ids.length : 0;
  const stored = lazy
    ? lazy.source.lines.bytes.subarray(lazy.source.lines.starts[0], lazy.source.lines.starts[from])
    : new Uint8Array(0);
  const target = lazy ? lazy.target : entries;
  let text = "";
  for (let i = from; i < target.length; i++) text += `${JSON.stringify(target[i])}\n`;
  const added = encoder.encode(text);
  const out = new Uint8Array(stored.byteLength + added.byteLength);
  out.set(stored, 0);
  out.set(added, stored.byteLength);
  return out;
}

/** Each entry's `id`, in order; a lazy list's stored entries are not parsed for it. */
export function entryIdsOf(entries: readonly SessionEntry[]): string[] {
  const lazy = lazyLists.get(entries);
  if (!lazy) return entries.map((e) => e.id);
  const ids = lazy.source.lines.ids.slice();
  for (let i = ids.length; i < lazy.target.length; i++) ids.push((lazy.target[i] as SessionEntry).id);
  return ids;
}

/**
 * Finds the lines of `bytes` (`encodeEntryLines`' output) for `ids`: an error when the line count
 * is not `ids.length` or the last line has no `\n`. Parses nothing.
 */
export function splitEntryLines(
  bytes: Uint8Array,
  ids: readonly string[],
): { ok: true; lines: EntryLines } | { ok: false; error: string } {
  const starts = new Uint32Array(ids.length + 1);
  let at = 0;
  for (let i = 0; i < ids.length; i++) {
    starts[i] = at;
    const end = bytes.indexOf(NEWLINE, at);
    if (end < 0) return { ok: false, error: `${i} entry lines; ${ids.length} entry ids` };
    at = end + 1;
  }
  starts[ids.length] = at;
  if (at !== bytes.byteLength) return { ok: false, error: `more than ${ids.length} entry lines` };
  return { ok: true, lines: { bytes, starts, ids } };
}

/**
 * An array of the entries in `lines` that parses entry `i` when it is first read (`list[i]`,
 * iteration, any array method) and keeps it. Otherwise an ordinary array: `Array.isArray` holds,
 * pushes append, and reading any entry gives the value `JSON.parse` of its line gives.
 * Contract: the lines were written by `encodeEntryLines` and checked (a checksum) by the caller; a
 * line that is not JSON throws when read. Copy it with `copyEntries`, not `slice`, to keep it lazy.
 */
export function lazyEntries(lines: EntryLines): SessionEntry[] {
  return listOn({ lines, parsed: 0 }, new Array<SessionEntry | undefined>(lines.ids.length).fill(undefined));
}

/** A copy that later pushes to either list do not change; a lazy list's copy stays lazy. */
export function copyEntries(entries: readonly SessionEntry[]): SessionEntry[] {
  const lazy = lazyLists.get(entries);
  return lazy ? listOn(lazy.source, lazy.target.slice()) : entries.slice();
}

/** Entries parsed from stored lines so far (every copy of the list counted together); 0 for a plain list. */
export function parsedEntryCount(entries: readonly SessionEntry[]): number {
  return lazyLists.get(entries)?.source.parsed ?? 0;
}

function listOn(source: LazySource, target: (SessionEntry | undefined)[]): SessionEntry[] {
  const stored = source.lines.ids.length;
  const { starts, bytes } = source.lines;
  /** `target[i]`, parsed from its line first if `i` names a stored entry not read yet. */
  const materialise = (key: string | symbol): void => {
    if (typeof key !== "string") return;
    const c = key.charCodeAt(0);
    if (c < 48 || c > 57) return;
    const i = Number(key);
    if (!(i < stored) || target[i] !== undefined || !Number.isInteger(i)) return;
    const line = bytes.subarray(starts[i], (starts[i + 1] as number) - 1);
    target[i] = JSON.parse(decoder.decode(line)) as SessionEntry;
    source.parsed++;
  };
  const list = new Proxy(target, {
    get(t, key, receiver) {
      materialise(key);
      return Reflect.get(t, key, receiver);
    },
    getOwnPropertyDescriptor(t, key) {
      materialise(key);
      return Reflect.getOwnPropertyDescriptor(t, key);
    },
  }) as SessionEntry[];
  lazyLists.set(list, { source, target });
  return list;
}
