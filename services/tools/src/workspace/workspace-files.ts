// The file access of tools: every path is opened beneath the workspace root (see beneath.ts), so no
// symlink, however and whenever it is swapped, leads a read or a write outside the workspace.
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { type FileHandle, mkdir, open, readdir, rename, rmdir, unlink } from "node:fs/promises";
import { at, Beneath, DIR_FLAGS, errnoOf, withBeneath } from "./beneath.js";
import { type WalkEntry, walkFiles } from "./walk-files.js";
import { workspaceComponents } from "./workspace-path.js";
import type { WorkspaceQuota } from "./workspace-quota.js";

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NONBLOCK, O_NOFOLLOW } = constants;
/** Read flags: O_NONBLOCK so that a FIFO planted in the workspace cannot hang the runner. */
const READ_FLAGS = O_RDONLY | O_NONBLOCK;

export type FileKind = "file" | "dir" | "other";

export interface FileInfo {
  kind: FileKind;
  size: number;
  /** Permission bits. */
  mode: number;
  mtimeMs: number;
}

/** An entry of `readdir`: symlinks are reported as what they lead to inside the workspace (`other` when outside or dangling). */
export interface DirEntry {
  name: string;
  kind: FileKind;
  isSymlink: boolean;
}

/** An entry of `walk`, with its path relative to the workspace root. */
export interface WorkspaceWalkEntry extends WalkEntry {
  path: string;
}

/**
 * A session's workspace as tools may touch it. Paths are relative to the workspace (or absolute
 * inside it). Symlinks inside the workspace are followed; one that leads outside fails with
 * `WorkspaceEscapeError` ("… outside the workspace …"). Errors of the file system keep their
 * errno `code` (ENOENT, EISDIR, ENOTDIR…). Writes are checked against the workspace's quota.
 */
export interface WorkspaceFiles {
  /** Absolute real path of the workspace. */
  readonly root: string;
  /** What `path` leads to; null when it does not exist. */
  stat(path: string): Promise<FileInfo | null>;
  /** Opens a regular file (or a directory) for reading; the caller closes the handle. */
  openRead(path: string): Promise<{ handle: FileHandle; info: FileInfo }>;
  /** A regular file's bytes. */
  readFile(path: string): Promise<Buffer>;
  /** Creates or overwrites a regular file, creating parent directories. */
  writeFile(path: string, data: string | Uint8Array, opts?: { mode?: number }): Promise<void>;
  /**
   * Replaces an existing regular file's content atomically with what `transform` makes of the
   * current bytes: a temporary file in the same directory, renamed over it; permission bits kept.
   * When `transform` throws, the file is left unchanged.
   */
  replaceFile(path: string, transform: (current: Buffer) => string | Uint8Array): Promise<void>;
  /** Creates a directory and its parents (an existing one is fine). */
  mkdir(path: string): Promise<void>;
  /** Removes a file, a symlink or an empty directory. */
  remove(path: string): Promise<void>;
  /** A directory's entries, unsorted. */
  readdir(path: string): Promise<DirEntry[]>;
  /** Walks a directory (see `walkFiles`); entries name their directory's descriptor, valid until the next entry. */
  walk(path: string, signal: AbortSignal, opts?: { skip?: ReadonlySet<string> }): AsyncGenerator<WorkspaceWalkEntry>;
  /** Opens a walked entry when it is a regular file (a symlink followed inside the workspace); null otherwise. */
  openWalked(entry: WorkspaceWalkEntry): Promise<{ handle: FileHandle; info: FileInfo } | null>;
  readonly quota: WorkspaceQuota | undefined;
}

const kindOf = (s: { isFile(): boolean; isDirectory(): boolean }): FileKind =>
  s.isFile() ? "file" : s.isDirectory() ? "dir" : "other";

async function infoOf(handle: FileHandle): Promise<FileInfo> {
  const s = await handle.stat();
  return { kind: kindOf(s), size: s.size, mode: s.mode & 0o7777, mtimeMs: s.mtimeMs };
}

function fsError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

/** Linux's /proc/self/fd makes beneath-the-root lookups possible; elsewhere the file tools refuse to run. */
export const SUPPORTS_BENEATH = process.platform === "linux";

/** The workspace `root` (an absolute real path) with its quota, if any. */
export function createWorkspaceFiles(root: string, quota?: WorkspaceQuota): WorkspaceFiles {
  const lookup = async <T>(
    path: string,
    opts: { createDirs?: boolean },
    fn: (walk: Beneath, name: string | undefined) => Promise<T>,
  ): Promise<T> => {
    if (!SUPPORTS_BENEATH) throw new Error("The file tools need Linux (/proc/self/fd) to stay inside the workspace");
    return withBeneath(root, path, workspaceComponents(root, path), opts, fn);
  };

  const openRead = (path: string) =>
    lookup(path, {}, async (walk, name) => {
      const { handle } = await walk.openFinal(name, name === undefined ? DIR_FLAGS : READ_FLAGS);
      try {
        return { handle, info: await infoOf(handle) };
      } catch (err) {
        await handle.close();
        throw err;
      }
    });

  const files: WorkspaceFiles = {
    root,
    quota,
    async stat(path) {
      try {
        const { handle, info } = await openRead(path);
        await handle.close();
        return info;
      } catch (err) {
        const code = errnoOf(err);
        if (code === "ENOENT" || code === "ENOTDIR") return null;
        // A socket or a FIFO's other side: present, but nothing a tool reads.
        if (code === "ENXIO") return { kind: "other", size: 0, mode: 0, mtimeMs: 0 };
        throw err;
      }
    },

    openRead,

    async readFile(path) {
      const { handle, info } = await openRead(path);
      try {
        if (info.kind === "dir") throw fsError("EISDIR", `${path} is a directory`);
        if (info.kind !== "file") throw fsError("EINVAL", `${path} is not a regular file`);
        return await handle.readFile();
      } finally {
        await handle.close();
      }
    },

    writeFile(path, data, opts = {}) {
      const bytes = typeof data === "string" ? Buffer.from(data, "utf-8") : data;
      return lookup(path, { createDirs: true }, async (walk, name) => {
        const what = `writing ${bytes.byteLength} bytes to ${path}`;
        const mode = opts.mode ?? 0o666;
        // An existing file is charged the difference; a new one is charged before it is created.
        let opened = await walk
          .openFinal(name, O_WRONLY | O_NONBLOCK, mode, true)
          .catch((err) => (errnoOf(err) === "ENOENT" ? undefined : Promise.reject(err)));
        let charged = false;
        if (!opened) {
          await quota?.reserve(bytes.byteLength, what);
          charged = true;
          opened = await walk.openFinal(name, O_WRONLY | O_CREAT | O_NONBLOCK, mode, true);
        }
        const { handle } = opened;
        try {
          const info = await infoOf(handle);
          if (info.kind !== "file") throw fsError("EINVAL", `${path} is not a regular file`);
          if (!charged) await quota?.reserve(bytes.byteLength - info.size, what);
          await handle.truncate(0);
          await handle.write(bytes, 0, bytes.byteLength, 0);
        } finally {
          await handle.close();
        }
      });
    },

    replaceFile(path, transform) {
      return lookup(path, {}, async (walk, start) => {
        const settled = await walk.settle(start);
        if (settled === undefined) throw fsError("EISDIR", `${path} is a directory`);
        const { handle: current, name } = await walk.openFinal(settled, READ_FLAGS);
        if (name === undefined) throw fsError("EISDIR", `${path} is a directory`);
        let info: FileInfo;
        let before: Buffer;
        try {
          info = await infoOf(current);
          if (info.kind === "dir") throw fsError("EISDIR", `${path} is a directory`);
          if (info.kind !== "file") throw fsError("EINVAL", `${path} is not a regular file`);
          before = await current.readFile();
        } finally {
          await current.close();
        }
        const next = transform(before);
        const bytes = typeof next === "string" ? Buffer.from(next, "utf-8") : next;
        await quota?.reserve(bytes.byteLength - info.size, `writing ${bytes.byteLength} bytes to ${path}`);
        const tmp = `${name}.fleet-edit-${randomBytes(4).toString("hex")}`;
        const out = await open(at(walk.dir, tmp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, info.mode);
        try {
          await out.write(bytes, 0, bytes.byteLength, 0);
          await out.close();
          await rename(at(walk.dir, tmp), at(walk.dir, name));
        } catch (err) {
          await out.close().catch(() => undefined);
          await unlink(at(walk.dir, tmp)).catch(() => undefined);
          throw err;
        }
      });
    },

    mkdir(path) {
      return lookup(path, { createDirs: true }, async (walk, name) => {
        const opened = await walk.openFinal(name, DIR_FLAGS, 0o777, true).catch(async (err) => {
          if (errnoOf(err) !== "ENOENT" || name === undefined) throw err;
          await mkdir(at(walk.dir, name)).catch((e) => (errnoOf(e) === "EEXIST" ? undefined : Promise.reject(e)));
          return walk.openFinal(name, DIR_FLAGS, 0o777, true);
        });
        await opened.handle.close();
      });
    },

    remove(path) {
      return lookup(path, {}, async (walk, name) => {
        if (name === undefined) throw fsError("EBUSY", "the workspace root cannot be removed");
        await unlink(at(walk.dir, name)).catch((err) =>
          errnoOf(err) === "EISDIR" ? rmdir(at(walk.dir, name)) : Promise.reject(err),
        );
        quota?.invalidate();
      });
    },

    readdir(path) {
      return lookup(path, {}, async (walk, name) => {
        const { handle: dir, name: opened } = await walk.openFinal(name, DIR_FLAGS);
        try {
          const prefix = relativeOf(root, walk.path, opened);
          const entries: DirEntry[] = [];
          for (const entry of await readdir(at(dir), { withFileTypes: true })) {
            if (!entry.isSymbolicLink()) {
              entries.push({ name: entry.name, kind: kindOf(entry), isSymlink: false });
              continue;
            }
            const target = await files.stat(`${prefix}${entry.name}`).catch(() => null);
            entries.push({ name: entry.name, kind: target?.kind ?? "other", isSymlink: true });
          }
          return entries;
        } finally {
          await dir.close();
        }
      });
    },

    async *walk(path, signal, opts = {}) {
      if (!SUPPORTS_BENEATH) throw new Error("The file tools need Linux (/proc/self/fd) to stay inside the workspace");
      const walk = await Beneath.open(root, path);
      try {
        const { handle: dir, name } = await walk.openFinal(await walk.walk(workspaceComponents(root, path)), DIR_FLAGS);
        const prefix = relativeOf(root, walk.path, name);
        try {
          for await (const entry of walkFiles(dir, signal, opts)) yield { ...entry, path: `${prefix}${entry.rel}` };
        } finally {
          await dir.close();
        }
      } finally {
        await walk.close();
      }
    },

    async openWalked(entry) {
      if (entry.kind === "symlink") {
        const opened = await openRead(entry.path).catch(() => null);
        if (opened && opened.info.kind !== "file") {
          await opened.handle.close();
          return null;
        }
        return opened;
      }
      if (entry.kind !== "file") return null;
      // Swapped for a symlink since it was listed: O_NOFOLLOW refuses it, and the entry is skipped.
      const handle = await open(at(entry.dir, entry.name), READ_FLAGS | O_NOFOLLOW).catch(() => null);
      if (!handle) return null;
      const info = await infoOf(handle);
      if (info.kind === "file") return { handle, info };
      await handle.close();
      return null;
    },
  };
  return files;
}

/** The workspace-relative prefix (`a/b/`, or empty) of the directory a lookup ended in. */
function relativeOf(root: string, walkPath: string, name: string | undefined): string {
  const dir = name === undefined ? walkPath : `${walkPath}/${name}`;
  const rel = dir.slice(root.length).replace(/^\/+/, "");
  return rel === "" ? "" : `${rel}/`;
}
