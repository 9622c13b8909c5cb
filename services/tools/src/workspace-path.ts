import { lstat, mkdir, readlink, realpath } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";

/** Thrown (as a plain Error, so the result text is its message) when a path leaves the workspace. */
export class WorkspaceEscapeError extends Error {
  override name = "WorkspaceEscapeError";
}

/** True when `target` is `root` or inside it (both absolute, normalised). */
export function isInside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * Creates (on demand) and returns the real path of a session's workspace: `<root>/<sessionId>`, or
 * `root` itself in `shared` mode. Session ids are subject tokens, so they cannot contain `/` or `..`.
 */
export async function ensureWorkspace(root: string, sessionId: string, mode: "per-session" | "shared" = "per-session") {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(sessionId)) throw new Error(`invalid session id ${JSON.stringify(sessionId)}`);
  const dir = mode === "shared" ? resolve(root) : join(resolve(root), sessionId);
  await mkdir(dir, { recursive: true });
  return realpath(dir);
}

/**
 * Resolves a tool's path argument inside the workspace `root` (an absolute real path) and returns
 * the real absolute path to operate on. Relative paths are relative to `root`; absolute paths must
 * lie inside it. Rejects `..` escapes, `~` paths, NUL bytes and symlinks leading outside: the path
 * itself when it exists, else its nearest existing ancestor, is resolved with `realpath` (dangling
 * symlinks are followed by hand). Throws `WorkspaceEscapeError` with a clear message.
 */
export async function resolveInWorkspace(root: string, input: string): Promise<string> {
  const raw = input.startsWith("@") ? input.slice(1) : input;
  const shown = JSON.stringify(input);
  if (raw.includes("\0")) throw new WorkspaceEscapeError(`Path ${shown} contains a NUL byte`);
  if (raw === "~" || raw.startsWith("~/")) {
    throw new WorkspaceEscapeError(`Path ${shown} is outside the workspace (home-directory paths are not allowed)`);
  }
  const lexical = resolve(root, raw === "" ? "." : raw);
  if (!isInside(root, lexical)) {
    throw new WorkspaceEscapeError(`Path ${shown} is outside the workspace ${root}`);
  }
  const real = await realResolve(lexical, 0);
  if (!isInside(root, real)) {
    throw new WorkspaceEscapeError(
      `Path ${shown} resolves through a symlink to ${real}, outside the workspace ${root}`,
    );
  }
  return real;
}

/** realpath for paths that may not exist yet: the nearest existing ancestor is resolved, the rest appended. */
async function realResolve(path: string, depth: number): Promise<string> {
  if (depth > 40) throw new WorkspaceEscapeError(`Too many levels of symbolic links at ${path}`);
  try {
    return await realpath(path);
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  // The path does not resolve: either it does not exist, or it is (or passes through) a dangling link.
  const stat = await lstat(path).catch((err) => (isMissing(err) ? null : Promise.reject(err)));
  if (stat?.isSymbolicLink()) {
    const target = await readlink(path);
    return realResolve(resolve(dirname(path), target), depth + 1);
  }
  const parent = dirname(path);
  if (parent === path) return path;
  const realParent = await realResolve(parent, depth);
  return join(realParent, relative(parent, path));
}

const isMissing = (err: unknown) => {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
};
