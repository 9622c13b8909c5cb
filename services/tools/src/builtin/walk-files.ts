import { readdir } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { throwIfAborted } from "./abort.js";

/** Directories never descended into by find and grep. */
export const SKIPPED_DIRS = new Set([".git", "node_modules"]);

export interface WalkEntry {
  abs: string;
  /** Path relative to the walk's start, with `/` separators. */
  rel: string;
  kind: "file" | "dir" | "symlink" | "other";
}

/**
 * Depth-first walk in name order. Symlinks are reported, never followed, so a walk cannot leave the
 * workspace. Unreadable directories are skipped. Throws `Operation aborted` when `signal` aborts.
 */
export async function* walkFiles(start: string, signal: AbortSignal): AsyncGenerator<WalkEntry> {
  const stack = [start];
  while (stack.length > 0) {
    throwIfAborted(signal);
    const dir = stack.pop() as string;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const subdirs: string[] = [];
    for (const entry of entries) {
      const abs = join(dir, entry.name);
      const rel = relative(start, abs).split(sep).join("/");
      const kind = entry.isSymbolicLink() ? "symlink" : entry.isDirectory() ? "dir" : entry.isFile() ? "file" : "other";
      yield { abs, rel, kind };
      if (kind === "dir" && !SKIPPED_DIRS.has(entry.name)) subdirs.push(abs);
    }
    for (let i = subdirs.length - 1; i >= 0; i--) stack.push(subdirs[i] as string);
  }
}
