import { lstat, open } from "node:fs/promises";
import { at, DIR_FLAGS } from "./beneath.js";
import { walkFiles } from "./walk-files.js";

const NEVER = new AbortController().signal;

/** What one entry counts against a quota: its size or its allocated blocks, whichever is larger. */
export function chargedBytes(info: { size: number; blocks: number }): number {
  return Math.max(info.size, info.blocks * 512);
}

/**
 * The bytes a workspace holds: every file, directory and link below `root` (real path), each
 * `chargedBytes`, walked without following links and without skipping any directory. Entries that
 * vanish while it walks count nothing.
 */
export async function measureWorkspace(root: string): Promise<number> {
  const handle = await open(root, DIR_FLAGS);
  try {
    let total = 0;
    for await (const entry of walkFiles(handle, NEVER, { skip: new Set() })) {
      const info = await lstat(at(entry.dir, entry.name)).catch(() => undefined);
      if (info) total += chargedBytes(info);
    }
    return total;
  } finally {
    await handle.close();
  }
}
