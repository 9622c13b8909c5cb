import { mkdir, realpath } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";

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
 * The components of a tool's path argument below the workspace `root` (an absolute real path),
 * after lexical normalisation: relative paths are relative to `root`, absolute ones must lie inside
 * it, a leading `@` is dropped (pi). `[]` is the root itself. Throws `WorkspaceEscapeError` for
 * `..` escapes, `~` paths and NUL bytes. Symlinks are not looked at here: `openBeneath` follows
 * them one component at a time and refuses those that lead outside.
 */
export function workspaceComponents(root: string, input: string): string[] {
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
  const rel = relative(root, lexical);
  return rel === "" ? [] : rel.split(sep);
}
