// Path lookups beneath the workspace root that no symlink can lead out of, however it is swapped.
//
// Linux only. Node has no openat(2), but `/proc/self/fd/<fd>/<name>` is the same lookup: the kernel
// jumps to the directory open as <fd> (the directory itself, wherever it has moved) and looks up one
// name in it. Every directory is entered with O_NOFOLLOW | O_DIRECTORY from the one before it, starting
// at a descriptor of the root; a symlink met on the way is read and expanded here, beneath the root,
// never by the kernel. So a directory swapped for a link after any check is refused by the open
// itself, and a final component opened with O_NOFOLLOW cannot be a link the kernel follows.
import { constants } from "node:fs";
import { type FileHandle, mkdir, open, readlink } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { isInside, WorkspaceEscapeError } from "./workspace-path.js";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;
/** Flags of every directory a walk enters. */
export const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
/** Symlinks expanded in one lookup before it fails (Linux's own limit). */
const MAX_LINKS = 40;

/** The path that makes a path-taking call look `name` (one component) up in the directory `dir`. */
export function at(dir: FileHandle, name?: string): string {
  return name === undefined ? `/proc/self/fd/${dir.fd}` : `/proc/self/fd/${dir.fd}/${name}`;
}

export const errnoOf = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;

/** True for the errors of a lookup whose target does not exist (or passes through a non-directory). */
export const isMissing = (err: unknown) => errnoOf(err) === "ENOENT" || errnoOf(err) === "ENOTDIR";

/** An error with an errno code, for failures found by the walk itself. */
function errnoError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

/**
 * One lookup beneath `root`: the chain of directories it entered, each open. Owns its descriptors;
 * `close()` releases them (a walk is never shared between calls, so no descriptor is closed while
 * another operation still names it).
 */
export class Beneath {
  private readonly dirs: FileHandle[];
  /** Names of `dirs[1..]` below the root, for messages and absolute links. */
  private readonly names: string[] = [];
  private links = 0;
  readonly root: string;
  /** The tool's path argument, quoted in messages. */
  private readonly shown: string;

  private constructor(root: string, shown: string, rootHandle: FileHandle) {
    this.root = root;
    this.shown = shown;
    this.dirs = [rootHandle];
  }

  /** Opens the root (an absolute real path). */
  static async open(root: string, shown: string): Promise<Beneath> {
    return new Beneath(root, shown, await open(root, DIR_FLAGS));
  }

  /** The directory the walk stands in. */
  get dir(): FileHandle {
    return this.dirs[this.dirs.length - 1] as FileHandle;
  }

  /** The path the walk stands at, as the host names it (for messages). */
  get path(): string {
    return join(this.root, ...this.names);
  }

  /**
   * Enters every component of `queue` but the last and returns the last (undefined when the path
   * ends at a directory the walk now stands in). Symlinks are expanded beneath the root; `..` goes
   * back up the chain. With `createDirs`, missing directories are made on the way.
   */
  async walk(queue: string[], createDirs = false): Promise<string | undefined> {
    const todo = [...queue];
    for (;;) {
      const name = todo.shift();
      if (name === undefined) return undefined;
      if (name === "" || name === ".") continue;
      if (name === "..") {
        this.up();
        continue;
      }
      if (todo.every((n) => n === "" || n === ".")) return name;
      const link = await this.enter(name, createDirs);
      if (link !== undefined) todo.unshift(...this.follow(link));
    }
  }

  /**
   * Opens `name` in the current directory with `flags` (O_NOFOLLOW added). A symlink there is
   * followed beneath the root, as many times as it takes; a link leading outside is refused.
   * `name` undefined opens the current directory itself (`flags` must include O_DIRECTORY).
   * Returns the handle and the name it was opened by, in the directory the walk then stands in.
   */
  async openFinal(
    name: string | undefined,
    flags: number,
    mode = 0o666,
    createDirs = false,
  ): Promise<{ handle: FileHandle; name: string | undefined }> {
    let current = name;
    for (;;) {
      if (current === undefined) {
        if (!(flags & O_DIRECTORY)) throw errnoError("EISDIR", `${this.path} is a directory`);
        return { handle: await open(at(this.dir, "."), DIR_FLAGS), name: undefined };
      }
      try {
        return { handle: await open(at(this.dir, current), flags | O_NOFOLLOW, mode), name: current };
      } catch (err) {
        const code = errnoOf(err);
        if (code !== "ELOOP" && code !== "ENOTDIR") throw err;
        const link = await this.linkAt(current);
        if (link === undefined) throw err;
        current = await this.walk(this.follow(link), createDirs);
      }
    }
  }

  /**
   * Where `name` in the current directory leads: the walk stands in its directory afterwards and the
   * final name is returned (undefined for a directory the walk now stands in), with every symlink on
   * the way expanded beneath the root. The final name is not a symlink when this returns, but may be
   * swapped for one later: open it with O_NOFOLLOW (`openFinal`).
   */
  async settle(name: string | undefined, createDirs = false): Promise<string | undefined> {
    let current = name;
    while (current !== undefined) {
      const link = await this.linkAt(current);
      if (link === undefined) return current;
      current = await this.walk(this.follow(link), createDirs);
    }
    return undefined;
  }

  /** The target of `name` in the current directory when it is a symlink; undefined when it is not (or is missing). */
  async linkAt(name: string): Promise<string | undefined> {
    try {
      return await readlink(at(this.dir, name));
    } catch (err) {
      const code = errnoOf(err);
      if (code === "EINVAL" || code === "ENOENT" || code === "ENOTDIR") return undefined;
      throw err;
    }
  }

  async close(): Promise<void> {
    const dirs = this.dirs.splice(0);
    this.names.length = 0;
    await Promise.all(dirs.map((d) => d.close().catch(() => undefined)));
  }

  /** Enters directory `name`; returns the link target instead when `name` is a symlink. */
  private async enter(name: string, createDirs: boolean): Promise<string | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        const handle = await open(at(this.dir, name), DIR_FLAGS);
        this.dirs.push(handle);
        this.names.push(name);
        return undefined;
      } catch (err) {
        const code = errnoOf(err);
        if (code === "ENOENT" && createDirs && attempt < 8) {
          await mkdir(at(this.dir, name)).catch((e) => (errnoOf(e) === "EEXIST" ? undefined : Promise.reject(e)));
          continue;
        }
        if (code !== "ENOTDIR" && code !== "ELOOP") throw err;
        const link = await this.linkAt(name);
        if (link === undefined) throw err;
        return link;
      }
    }
  }

  /** The components to walk for a link met in the current directory; an absolute target restarts at the root. */
  private follow(target: string): string[] {
    if (++this.links > MAX_LINKS) {
      throw new WorkspaceEscapeError(`Too many levels of symbolic links at ${JSON.stringify(this.shown)}`);
    }
    const leads = resolve(this.path, target);
    if (!isInside(this.root, leads)) {
      throw new WorkspaceEscapeError(
        `Path ${JSON.stringify(this.shown)} resolves through a symlink to ${leads}, outside the workspace ${this.root}`,
      );
    }
    if (!isAbsolute(target)) return target.split("/");
    while (this.dirs.length > 1) void this.popDir();
    const rel = relative(this.root, target);
    return rel === "" ? [] : rel.split(sep);
  }

  private up(): void {
    if (this.dirs.length === 1) {
      throw new WorkspaceEscapeError(
        `Path ${JSON.stringify(this.shown)} resolves through a symlink to ${resolve(this.root, "..")}, outside the workspace ${this.root}`,
      );
    }
    void this.popDir();
  }

  private popDir(): Promise<void> {
    const handle = this.dirs.pop() as FileHandle;
    this.names.pop();
    return handle.close().catch(() => undefined);
  }
}

/**
 * Runs `fn` with a walk that stands in the directory holding `components`' last name (entering
 * the others), and that name; closes the walk afterwards.
 */
export async function withBeneath<T>(
  root: string,
  shown: string,
  components: readonly string[],
  opts: { createDirs?: boolean },
  fn: (walk: Beneath, name: string | undefined) => Promise<T>,
): Promise<T> {
  const walk = await Beneath.open(root, shown);
  try {
    const name = await walk.walk([...components], opts.createDirs ?? false);
    return await fn(walk, name);
  } finally {
    await walk.close();
  }
}
