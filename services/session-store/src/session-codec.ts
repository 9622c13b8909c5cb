import {
  agentRefOf,
  type ModelRef,
  ModelRef as ModelRefSchema,
  PendingApproval,
  parseAgentRef,
  SessionConfig,
  SessionEntry,
  type SessionTree,
  ThinkingLevel,
  validate,
} from "@fleet/protocol";
import { z } from "zod";
import { searchMembers } from "./search-terms.js";
import type { ProjectedSession } from "./session-state.js";

/**
 * How a `ProjectedSession` is laid out in Redis (see keys.ts) and read back. The meta hash holds
 * scalars as decimal strings and nullable values as JSON; entries are stored as their JSON text,
 * exactly as `JSON.stringify` of the reducer's entry, so a rebuild writes the same bytes.
 */
export type MetaFields = Record<string, string>;

export function encodeMeta(s: ProjectedSession): MetaFields {
  return {
    lastSeq: String(s.lastSeq),
    createdAt: String(s.createdAt),
    updatedAt: String(s.updatedAt),
    status: s.status,
    sid: JSON.stringify(s.tree.sessionId),
    leaf: JSON.stringify(s.tree.leafId),
    name: JSON.stringify(s.tree.name),
    model: JSON.stringify(s.model),
    thinking: s.thinkingLevel,
    tools: JSON.stringify(s.activeToolNames),
    config: JSON.stringify(s.tree.config),
    forkedFrom: JSON.stringify(s.tree.forkedFrom),
    agent: agentRefOf(s.tree.agent),
  };
}

/** The writes that turn the stored `prev` into `next`; applied atomically only if lastSeq is still `prev.lastSeq`. */
export interface WritePlan {
  expectedLastSeq: number;
  meta: Array<[string, string]>;
  /** New entries with their index in the entries list. */
  entries: Array<{ id: string; json: string }>;
  firstIndex: number;
  labelSet: Array<[string, string]>;
  labelDel: string[];
  leafEvents: string[];
  /** Pending approvals added or changed (tool call id, JSON) and gone (PROTOCOL change 44). */
  approvalSet: Array<[string, string]>;
  approvalDel: string[];
  /** Search index members to add and to remove (`searchMembers` of next minus prev and back). */
  termAdd: string[];
  termDel: string[];
  /** The index entries the session has after the write: open run, oldest pending approval's ts. */
  running: boolean;
  oldestApproval: number | null;
  /** The session's agent version (`name@version`, "" = none) before and after: the agents index moves it. */
  agentBefore: string;
  agentAfter: string;
}

export function planWrite(prev: ProjectedSession, next: ProjectedSession): WritePlan {
  const meta: Array<[string, string]> = [
    ["lastSeq", String(next.lastSeq)],
    ["updatedAt", String(next.updatedAt)],
  ];
  if (next.createdAt !== prev.createdAt || prev.lastSeq === 0) meta.push(["createdAt", String(next.createdAt)]);
  if (next.status !== prev.status || prev.lastSeq === 0) meta.push(["status", next.status]);
  if (next.thinkingLevel !== prev.thinkingLevel || prev.lastSeq === 0) meta.push(["thinking", next.thinkingLevel]);
  const json = (field: string, a: unknown, b: unknown) => {
    if (prev.lastSeq === 0 || (a !== b && JSON.stringify(a) !== JSON.stringify(b)))
      meta.push([field, JSON.stringify(b)]);
  };
  json("sid", prev.tree.sessionId, next.tree.sessionId);
  json("leaf", prev.tree.leafId, next.tree.leafId);
  json("name", prev.tree.name, next.tree.name);
  json("model", prev.model, next.model);
  json("tools", prev.activeToolNames, next.activeToolNames);
  json("config", prev.tree.config, next.tree.config);
  json("forkedFrom", prev.tree.forkedFrom, next.tree.forkedFrom);
  const agentBefore = prev.lastSeq === 0 ? "" : agentRefOf(prev.tree.agent);
  const agentAfter = agentRefOf(next.tree.agent);
  if (prev.lastSeq === 0 || agentBefore !== agentAfter) meta.push(["agent", agentAfter]);

  const firstIndex = prev.tree.entries.length;
  const entries = next.tree.entries.slice(firstIndex).map((e) => ({ id: e.id, json: JSON.stringify(e) }));
  const labelSet: Array<[string, string]> = [];
  const labelDel: string[] = [];
  if (next.tree.labels !== prev.tree.labels) {
    for (const [target, label] of Object.entries(next.tree.labels)) {
      if (!Object.hasOwn(prev.tree.labels, target) || prev.tree.labels[target] !== label)
        labelSet.push([target, label]);
    }
    for (const target of Object.keys(prev.tree.labels)) {
      if (!Object.hasOwn(next.tree.labels, target)) labelDel.push(target);
    }
  }
  const leafEvents = next.tree.leafEventIds.slice(prev.tree.leafEventIds.length);
  const approvalSet: Array<[string, string]> = [];
  const approvalDel: string[] = [];
  if (next.approvals !== prev.approvals) {
    for (const [id, a] of next.approvals) if (prev.approvals.get(id) !== a) approvalSet.push([id, JSON.stringify(a)]);
    for (const id of prev.approvals.keys()) if (!next.approvals.has(id)) approvalDel.push(id);
  }
  const termAdd: string[] = [];
  const termDel: string[] = [];
  if (prev.lastSeq === 0 || next.tree.name !== prev.tree.name || next.tree.labels !== prev.tree.labels) {
    const before = new Set(searchMembers(prev));
    const after = new Set(searchMembers(next));
    for (const m of after) if (!before.has(m)) termAdd.push(m);
    for (const m of before) if (!after.has(m)) termDel.push(m);
  }
  let oldestApproval: number | null = null;
  for (const a of next.approvals.values()) {
    if (oldestApproval === null || a.requestedAt < oldestApproval) oldestApproval = a.requestedAt;
  }
  return {
    expectedLastSeq: prev.lastSeq,
    meta,
    entries,
    firstIndex,
    labelSet,
    labelDel,
    leafEvents,
    approvalSet,
    approvalDel,
    termAdd,
    termDel,
    running: next.status === "running",
    oldestApproval,
    agentBefore,
    agentAfter,
  };
}

/** The raw Redis contents of one session, as the read script returns them. */
export interface RawSession {
  meta: MetaFields;
  /** Entries from `fromIndex` on. */
  entries: string[];
  labels: Record<string, string>;
  /** Leaf event ids from `fromLeafEvent` on. */
  leafEvents: string[];
  /** Pending approvals: tool call id → JSON (all of them). */
  approvals: Record<string, string>;
}

const jsonOf = <S extends z.ZodType>(schema: S) =>
  z.string().transform((text, ctx): z.infer<S> => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      ctx.addIssue({ code: "custom", message: "not JSON" });
      return z.NEVER;
    }
    const checked = schema.safeParse(value);
    if (!checked.success) {
      ctx.addIssue({ code: "custom", message: checked.error.issues.map((i) => i.message).join("; ") });
      return z.NEVER;
    }
    return checked.data;
  });

const seqField = z
  .string()
  .regex(/^(0|[1-9][0-9]*)$/)
  .transform(Number);

const MetaSchema = z.object({
  lastSeq: seqField,
  createdAt: seqField,
  updatedAt: seqField,
  status: z.enum(["idle", "running"]),
  sid: jsonOf(z.string().nullable()),
  leaf: jsonOf(z.string().nullable()),
  name: jsonOf(z.string().nullable()),
  model: jsonOf(ModelRefSchema.nullable()),
  thinking: ThinkingLevel,
  tools: jsonOf(z.array(z.string()).nullable()),
  config: jsonOf(SessionConfig.nullable()),
  forkedFrom: jsonOf(z.object({ sessionId: z.string(), entryId: z.string() }).nullable()),
  /** Absent in sessions written before agents. */
  agent: z.string().optional(),
});
type DecodedMeta = z.infer<typeof MetaSchema>;

export type DecodeResult = { ok: true; session: ProjectedSession } | { ok: false; error: string };

/**
 * Rebuilds the session from its Redis contents (`raw` holding everything from index 0), or extends
 * `base` (the same session at an earlier `lastSeq` of the same namespace) with `raw` holding what
 * was appended since. Every value is validated; a corrupt key is an error, never a guess.
 */
export function decodeSession(sessionId: string, raw: RawSession, base?: ProjectedSession): DecodeResult {
  const meta = validate(MetaSchema, raw.meta);
  if (!meta.ok) return { ok: false, error: `session ${sessionId}: corrupt meta: ${meta.error}` };
  const entries = base ? base.tree.entries.slice() : [];
  for (let i = 0; i < raw.entries.length; i++) {
    const index = entries.length;
    let value: unknown;
    try {
      value = JSON.parse(raw.entries[i] as string);
    } catch {
      return { ok: false, error: `session ${sessionId}: entry ${index} is not JSON` };
    }
    const entry = validate(SessionEntry, value);
    if (!entry.ok) return { ok: false, error: `session ${sessionId}: entry ${index}: ${entry.error}` };
    entries.push(entry.value);
  }
  const labels: Record<string, string> = {};
  for (const [target, label] of Object.entries(raw.labels)) define(labels, target, label);
  const approvals = new Map<string, PendingApproval>();
  for (const [id, text] of Object.entries(raw.approvals)) {
    const approval = validate(jsonOf(PendingApproval), text);
    if (!approval.ok) return { ok: false, error: `session ${sessionId}: approval ${id}: ${approval.error}` };
    approvals.set(id, approval.value);
  }
  const m: DecodedMeta = meta.value;
  const tree: SessionTree = {
    sessionId: m.sid,
    config: m.config,
    forkedFrom: m.forkedFrom,
    ...agentField(m.agent),
    entries,
    leafId: m.leaf,
    labels,
    name: m.name,
    leafEventIds: [...(base?.tree.leafEventIds ?? []), ...raw.leafEvents],
  };
  return {
    ok: true,
    session: {
      sessionId,
      tree,
      lastSeq: m.lastSeq,
      createdAt: m.createdAt,
      updatedAt: m.updatedAt,
      status: m.status,
      model: m.model as ModelRef | null,
      thinkingLevel: m.thinking,
      activeToolNames: m.tools,
      approvals: sameApprovals(base, approvals) ? (base as ProjectedSession).approvals : approvals,
    },
  };
}

/** The tree's `agent` from the stored `name@version` (none when empty or absent). */
function agentField(stored: string | undefined): { agent?: { name: string; version: number } } {
  const ref = stored ? parseAgentRef(stored) : undefined;
  return ref?.version !== undefined ? { agent: { name: ref.name, version: ref.version } } : {};
}

/** Whether `base` has exactly these approvals (then its map is kept, so a write plans no change). */
function sameApprovals(base: ProjectedSession | undefined, approvals: ReadonlyMap<string, PendingApproval>): boolean {
  if (!base || base.approvals.size !== approvals.size) return false;
  for (const [id, a] of approvals) {
    const b = base.approvals.get(id);
    if (!b || JSON.stringify(a) !== JSON.stringify(b)) return false;
  }
  return true;
}

function define<V>(record: Record<string, V>, key: string, value: V) {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
}
