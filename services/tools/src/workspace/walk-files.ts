import type { FileHandle } from "node:fs/promises";
import { open, readdir } from "node:fs/promises";
import { throwIfAborted } from "../builtin/abort.js";
import { at, DIR_FLAGS } from "./beneath.js";

/** Directories never descended into by find and grep. */
export const SKIPPED_DIRS = new Set([".git", "node_modules"]);

/** Directory levels a walk descends at most (each level holds one descriptor while it is walked). */
export const MAX_WALK_DEPTH = 128;

export interface WalkEntry {
  /** The directory holding the entry, open while the entry is being handled (until the next one is asked for). */
  dir: FileHandle;
  name: string;
  /** Path relative to the walk's start, with `/` separators. */
  rel: string;
  kind: "file" | "dir" | "symlink" | "other";
}

/**
 * Depth-first walk in name order from the directory `start` (open; not closed here): a directory's
 * entries, then each subdirectory's. Subdirectories are entered from their parent's descriptor with
 * O_NOFOLLOW, so a directory swapped for a symlink is skipped, never followed. Symlinks are reported,
 * not followed. Unreadable directories are skipped; so are levels below `MAX_WALK_DEPTH`. Throws
 * `Operation aborted` when `signal` aborts.
 */
export async function* walkFiles(
  start: FileHandle,
  signal: AbortSignal,
  opts: { skip?: ReadonlySet<string> } = {},
): AsyncGenerator<WalkEntry> {
  yield* walkDir(start, "", signal, opts.skip ?? SKIPPED_DIRS, 0);
}

async function* walkDir(
  dir: FileHandle,
  prefix: string,
  signal: AbortSignal,
  skip: ReadonlySet<string>,
  depth: number,
): AsyncGenerator<WalkEntry> {
  throwIfAborted(signal);
  const entries = await readdir(at(dir), { withFileTypes: true }).catch(() => []);
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const subdirs: Array<{ name: string; rel: string }> = [];
  for (const entry of entries) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    const kind = entry.isSymbolicLink() ? "symlink" : entry.isDirectory() ? "dir" : entry.isFile() ? "file" : "other";
    yield { dir, name: entry.name, rel, kind };
    if (kind === "dir" && !skip.has(entry.name)) subdirs.push({ name: entry.name, rel });
  }
  if (depth + 1 >= MAX_WALK_DEPTH) return;
  for (const sub of subdirs) {
    throwIfAborted(signal);
    const handle = await open(at(dir, sub.name), DIR_FLAGS).catch(() => undefined);
    if (!handle) continue;
    try {
      yield* walkDir(handle, sub.rel, signal, skip, depth + 1);
    } finally {
      await handle.close().catch(() => undefined);
    }
  }
}
