import {
  buildContext,
  exportPiJsonl,
  getBranch,
  getEntry,
  parseJson,
  partitionOf,
  type SessionTree,
  type StoreErrorCode,
  type StoreOp,
  StoreRequest,
  validate,
} from "@fleet/protocol";
import { countAgentSessions, listApprovals, listRunning, searchSessions } from "./index-queries.js";
import type { NamespaceControl } from "./namespace.js";
import type { SessionCache } from "./session-cache.js";
import { listIdleSessions, listSessions } from "./session-index.js";
import type { SessionRepo } from "./session-repo.js";
import type { ProjectedSession } from "./session-state.js";

export type StoreErrorReply = { ok: false; code: StoreErrorCode; error: string };
export type QueryReply = ({ ok: true } & Record<string, unknown>) | StoreErrorReply;

export interface QueryContext {
  repo: SessionRepo;
  cache: SessionCache;
  namespaces: NamespaceControl;
  partitions: number;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  /**
   * Content by reference resolved (PROTOCOL "Large inputs"), for `export`: a pi file holds its
   * texts and images inline. Absent: exported as stored.
   */
  resolveContent?: <T>(value: T) => Promise<T>;
}

export const DEFAULT_MIN_SEQ_TIMEOUT_MS = 5_000;
export const MAX_MIN_SEQ_TIMEOUT_MS = 30_000;
export const DEFAULT_LIST_LIMIT = 50;

const fail = (code: StoreErrorReply["code"], error: string): StoreErrorReply => ({ ok: false, code, error });

/** While no namespace is active (Redis lost its data and the store rebuilds from the log). */
export const REBUILDING_ERROR = "the store lost its Redis data and is rebuilding from the log; retry shortly";
const rebuilding = () => fail("unavailable", REBUILDING_ERROR);

/**
 * The last `get_context` reply per tree. Trees are immutable (every change makes a new one) and the
 * key holds the session's lastSeq and the requested leaf, so a hit is exactly what would be built
 * again: repeated reads of an unchanged session reuse the reply object (and the query server its
 * encoded bytes). Entries go with their tree.
 */
const contextReplies = new WeakMap<SessionTree, { key: string; reply: QueryReply }>();

type Read =
  | { kind: "missing" }
  | { kind: "ok"; session: ProjectedSession }
  | { kind: "failed"; reply: StoreErrorReply };

/** The session as stored now, reusing the cached fold when Redis has nothing newer. */
async function readSession(ctx: QueryContext, ns: string, sessionId: string): Promise<Read> {
  const cached = ctx.cache.get(ns, sessionId);
  const loaded = await ctx.repo.load(ns, sessionId, cached);
  switch (loaded.kind) {
    case "same":
      return { kind: "ok", session: cached as ProjectedSession };
    case "ok":
      ctx.cache.put(ns, loaded.session);
      return { kind: "ok", session: loaded.session };
    case "missing":
      ctx.cache.delete(ns, sessionId);
      return { kind: "missing" };
    case "corrupt":
      ctx.cache.delete(ns, sessionId);
      return {
        kind: "failed",
        reply: fail("timeout", `the store cannot read this session (${loaded.error}); run verify`),
      };
  }
}

/**
 * Reads a session; with `minSeq`, first waits until the projection has applied that stream sequence
 * (the session's lastSeq, or its partition's applied position, reached it), polling Redis until
 * `timeoutMs`. The namespace is re-read on every poll, so a rebuild switch during the wait is seen.
 */
async function readAtLeast(
  ctx: QueryContext,
  sessionId: string,
  minSeq: number | undefined,
  timeoutMs: number | undefined,
): Promise<ProjectedSession | StoreErrorReply> {
  const timeout = Math.min(timeoutMs ?? DEFAULT_MIN_SEQ_TIMEOUT_MS, MAX_MIN_SEQ_TIMEOUT_MS);
  const deadline = ctx.now() + timeout;
  let delay = 2;
  for (;;) {
    const active = await ctx.namespaces.peek();
    if (!active) return rebuilding();
    const read = await readSession(ctx, active.ns, sessionId);
    if (read.kind === "failed") return read.reply;
    // Missing may mean the namespace vanished after it was read (FLUSHALL): never answer not_found then.
    if (read.kind === "missing" && (await ctx.namespaces.peek())?.ns !== active.ns) return rebuilding();
    const seq = read.kind === "ok" ? read.session.lastSeq : 0;
    const partition = partitionOf(sessionId, ctx.partitions);
    let applied: number | undefined;
    let reached = minSeq === undefined || seq >= minSeq;
    if (!reached) {
      applied = await ctx.repo.applied(active.ns, partition);
      reached = applied >= (minSeq as number);
    }
    if (reached) return read.kind === "ok" ? read.session : fail("not_found", `Session ${sessionId} not found`);
    const left = deadline - ctx.now();
    if (left <= 0) {
      return fail(
        "timeout",
        `timed out after ${timeout} ms waiting for the projection to reach seq ${minSeq} (session at ${seq}, partition ${partition} applied to ${applied})`,
      );
    }
    await ctx.sleep(Math.min(delay, left));
    delay = Math.min(delay * 2, 50);
  }
}

/** Answers one request. Never throws for bad input; every failure is a `{ok:false, code, error}` reply. */
export async function handleQuery(ctx: QueryContext, op: StoreOp, payload: Uint8Array | string): Promise<QueryReply> {
  const json = parseJson(payload);
  if (!json.ok) return fail("invalid", json.error);
  switch (op) {
    case "get_context": {
      const req = validate(StoreRequest.get_context, json.value);
      if (!req.ok) return fail("invalid", req.error);
      const s = await readAtLeast(ctx, req.value.sessionId, req.value.minSeq, req.value.timeoutMs);
      if ("ok" in s) return s;
      const key = `${s.lastSeq}|${req.value.leafId === undefined ? "" : JSON.stringify(req.value.leafId)}`;
      const memo = contextReplies.get(s.tree);
      if (memo?.key === key) return memo.reply;
      const built = buildContext(s.tree, req.value.leafId);
      if (!built.ok) return built;
      const reply: QueryReply = {
        ok: true,
        messages: built.messages,
        model: built.model,
        thinkingLevel: built.thinkingLevel,
        activeToolNames: built.activeToolNames,
        leafId: built.leafId,
        seq: s.lastSeq,
      };
      contextReplies.set(s.tree, { key, reply });
      return reply;
    }
    case "get_tree": {
      const req = validate(StoreRequest.get_tree, json.value);
      if (!req.ok) return fail("invalid", req.error);
      const s = await readAtLeast(ctx, req.value.sessionId, req.value.minSeq, undefined);
      if ("ok" in s) return s;
      return { ok: true, entries: s.tree.entries, leafId: s.tree.leafId, labels: s.tree.labels, seq: s.lastSeq };
    }
    case "get_branch": {
      const req = validate(StoreRequest.get_branch, json.value);
      if (!req.ok) return fail("invalid", req.error);
      const s = await readAtLeast(ctx, req.value.sessionId, undefined, undefined);
      if ("ok" in s) return s;
      const branch = getBranch(s.tree, req.value.leafId);
      return branch.ok ? { ok: true, entries: branch.entries } : branch;
    }
    case "get_entry": {
      const req = validate(StoreRequest.get_entry, json.value);
      if (!req.ok) return fail("invalid", req.error);
      const s = await readAtLeast(ctx, req.value.sessionId, undefined, undefined);
      if ("ok" in s) return s;
      const found = getEntry(s.tree, req.value.entryId);
      return found.ok ? { ok: true, entry: found.entry } : found;
    }
    case "list_sessions": {
      const req = validate(StoreRequest.list_sessions, json.value);
      if (!req.ok) return fail("invalid", req.error);
      const active = await ctx.namespaces.peek();
      if (!active) return rebuilding();
      const page = await listSessions(ctx.repo.redis, ctx.repo.prefix, active.ns, {
        limit: req.value.limit ?? DEFAULT_LIST_LIMIT,
        cursor: req.value.cursor,
      });
      return page.ok ? page : fail("invalid", page.error);
    }
    case "list_idle": {
      const req = validate(StoreRequest.list_idle, json.value);
      if (!req.ok) return fail("invalid", req.error);
      const active = await ctx.namespaces.peek();
      if (!active) return rebuilding();
      const page = await listIdleSessions(ctx.repo.redis, ctx.repo.prefix, active.ns, {
        before: req.value.before,
        limit: req.value.limit ?? DEFAULT_LIST_LIMIT,
        cursor: req.value.cursor,
      });
      return page.ok ? page : fail("invalid", page.error);
    }
    case "list_running": {
      const req = validate(StoreRequest.list_running, json.value);
      if (!req.ok) return fail("invalid", req.error);
      const active = await ctx.namespaces.peek();
      if (!active) return rebuilding();
      const page = await listRunning(ctx.repo.redis, ctx.repo.prefix, active.ns, {
        limit: req.value.limit ?? DEFAULT_LIST_LIMIT,
        cursor: req.value.cursor,
      });
      return page.ok ? page : fail("invalid", page.error);
    }
    case "count_agent_sessions": {
      const req = validate(StoreRequest.count_agent_sessions, json.value);
      if (!req.ok) return fail("invalid", req.error);
      const active = await ctx.namespaces.peek();
      if (!active) return rebuilding();
      const counts = await countAgentSessions(ctx.repo.redis, ctx.repo.prefix, active.ns, req.value.name);
      return { ok: true, counts };
    }
    case "search_sessions": {
      const req = validate(StoreRequest.search_sessions, json.value);
      if (!req.ok) return fail("invalid", req.error);
      const active = await ctx.namespaces.peek();
      if (!active) return rebuilding();
      const page = await searchSessions(ctx.repo.redis, ctx.repo.prefix, active.ns, {
        q: req.value.q,
        limit: req.value.limit ?? DEFAULT_LIST_LIMIT,
        cursor: req.value.cursor,
      });
      return page.ok ? page : fail("invalid", page.error);
    }
    case "list_approvals": {
      const req = validate(StoreRequest.list_approvals, json.value);
      if (!req.ok) return fail("invalid", req.error);
      const active = await ctx.namespaces.peek();
      if (!active) return rebuilding();
      const found = await listApprovals(ctx.repo.redis, ctx.repo.prefix, active.ns, { sessionId: req.value.sessionId });
      return found.ok ? found : fail("timeout", found.error);
    }
    case "export": {
      const req = validate(StoreRequest.export, json.value);
      if (!req.ok) return fail("invalid", req.error);
      const s = await readAtLeast(ctx, req.value.sessionId, undefined, undefined);
      if ("ok" in s) return s;
      let entries = s.tree.entries;
      try {
        entries = ctx.resolveContent ? await ctx.resolveContent(entries) : entries;
      } catch (err) {
        return fail("unavailable", `cannot read the session's content by reference: ${(err as Error).message}`);
      }
      const jsonl = exportPiJsonl({
        sessionId: req.value.sessionId,
        createdAt: s.createdAt,
        entries,
        leafId: s.tree.leafId,
      });
      return { ok: true, jsonl };
    }
  }
}
