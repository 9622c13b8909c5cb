// The session tree projection: entries, leaf, labels, name and config, folded from a session's events.
import type { SessionAgent } from "../agents.js";
import type { ModelRef, SessionConfig } from "../config.js";
import { ENTRY_EVENT_TYPES, type EntryEvent, type EventOf, type FleetEvent } from "../events.js";
import type { ContextMessage, ThinkingLevel } from "../messages.js";
import type { SessionEntry } from "../session-entry.js";
import {
  buildContextFromPath,
  type ContextDefaults,
  extendPathContext,
  NO_CONTEXT_DEFAULTS,
  type PathContext,
} from "./build-context.js";
import { copyEntries } from "./lazy-entries.js";
import { deleteOwn, getOwn, type OwnRecord, setOwn } from "./own-record.js";

/**
 * The persisted projection of one session. Plain JSON data (no Maps, no undefined values): folding
 * the same events in the same order gives the same `JSON.stringify`, byte for byte.
 */
export interface SessionTree {
  sessionId: string | null;
  /** From `session_created`; `null` before it. */
  config: SessionConfig | null;
  forkedFrom: { sessionId: string; entryId: string } | null;
  /**
   * The agent version the session runs (`session_created.agent`, then each `agent_change`); absent
   * (not `undefined`) when none, so trees of sessions without agents keep their bytes.
   */
  agent?: SessionAgent;
  /** Every entry, in creation (log) order. Never modified or removed. */
  entries: SessionEntry[];
  /** The last created entry, or the target of the last `leaf` event; `null` = before the first entry. */
  leafId: string | null;
  /** Entry id → label; the latest `label` entry for a target wins, a `null` or empty label removes it. */
  labels: OwnRecord<string>;
  /** From the latest `session_info` (trimmed); `null` when none or empty. */
  name: string | null;
  /** Ids of the `leaf` events applied, so a redelivered one is not applied twice. */
  leafEventIds: string[];
}

export function emptySessionTree(): SessionTree {
  return {
    sessionId: null,
    config: null,
    forkedFrom: null,
    entries: [],
    leafId: null,
    labels: {},
    name: null,
    leafEventIds: [],
  };
}

/**
 * The entry an event creates (`undefined` for events without `entry`). `id` and `parentId` come from
 * `event.entry`, `timestamp` from `meta.ts`. A `message_end` of a user, assistant or toolResult
 * message gives a `message` entry; of a custom message, a `custom_message` entry.
 */
export function entryFromEvent(event: FleetEvent): SessionEntry | undefined {
  if (!ENTRY_TYPES.has(event.type) || !("entry" in event)) return undefined;
  const e = event as EntryEvent;
  const { id, parentId } = e.entry;
  const timestamp = e.meta.ts;
  switch (e.type) {
    case "message_end": {
      const m = e.message;
      if (m.role !== "custom") return { type: "message", id, parentId, timestamp, message: m };
      return {
        type: "custom_message",
        id,
        parentId,
        timestamp,
        customType: m.customType,
        content: m.content,
        display: m.display,
        ...(m.details !== undefined ? { details: m.details } : {}),
      };
    }
    case "model_change":
      return { type: "model_change", id, parentId, timestamp, provider: e.provider, modelId: e.modelId };
    case "thinking_level_change":
      return { type: "thinking_level_change", id, parentId, timestamp, thinkingLevel: e.thinkingLevel };
    case "active_tools_change":
      return { type: "active_tools_change", id, parentId, timestamp, toolNames: e.toolNames };
    case "compaction":
      return {
        type: "compaction",
        id,
        parentId,
        timestamp,
        summary: e.summary,
        firstKeptEntryId: e.firstKeptEntryId,
        tokensBefore: e.tokensBefore,
        ...(e.details !== undefined ? { details: e.details } : {}),
      };
    case "branch_summary":
      return { type: "branch_summary", id, parentId, timestamp, fromId: e.fromId, summary: e.summary };
    case "label":
      return { type: "label", id, parentId, timestamp, targetId: e.targetId, label: e.label };
    case "session_info":
      return { type: "session_info", id, parentId, timestamp, name: e.name };
    case "custom":
      return { type: "custom", id, parentId, timestamp, customType: e.customType, data: e.data };
  }
}

const ENTRY_TYPES: ReadonlySet<FleetEvent["type"]> = new Set(ENTRY_EVENT_TYPES);

/** The event types that may change a tree: `session_created`, `config_change`, `leaf` and the entry events. */
export const SESSION_TREE_EVENT_TYPES: ReadonlySet<FleetEvent["type"]> = new Set<FleetEvent["type"]>([
  "session_created",
  "config_change",
  "agent_change",
  "leaf",
  ...ENTRY_EVENT_TYPES,
]);

/**
 * Applies one event. Returns `tree` itself when the event changes nothing: events that are not
 * `session_created`, `leaf` or entry events, an entry whose id already exists, a `leaf` event
 * already applied, and any `session_created` after the first. So a redelivered event is a no-op
 * (idempotent by `meta.id` / entry id). The fold does not validate: a `leaf` to an unknown id is
 * recorded, and lookups at it report `not_found`.
 * Contract: never throws; `tree` is not modified. Cost: a changing event copies the entry list
 * (copy-on-write), so replay long logs with `foldSessionTreeEvents`, and a single owner of a long-lived
 * tree folds with `foldSessionTreeInPlace`. Id lookups use an index cached
 * outside the tree (rebuilt on first use for a tree read back from JSON).
 */
export function foldSessionTree(tree: SessionTree, event: FleetEvent): SessionTree {
  if (!changes(tree, event)) return tree;
  const draft = cloneTree(tree);
  applyInPlace(draft, event);
  return draft;
}

/**
 * Applies one event to `tree` itself, with `foldSessionTree`'s rules; returns whether it changed.
 * For a single owner that never hands the tree (or its `entries`, `labels`, `leafEventIds`) to
 * anyone who keeps it across a fold: it costs O(1) per event where `foldSessionTree` copies the
 * entry list.
 */
export function foldSessionTreeInPlace(tree: SessionTree, event: FleetEvent): boolean {
  if (!changes(tree, event)) return false;
  const index = builtIndexOf(tree.entries);
  if (index && index.tip !== tree.entries.length) forgetIndex(tree.entries); // a longer array shares it
  applyInPlace(tree, event);
  return true;
}

/** Folds many events with one copy of `tree` (default: empty); same result as `foldSessionTree` in a loop. */
export function foldSessionTreeEvents(
  events: Iterable<FleetEvent>,
  tree: SessionTree = emptySessionTree(),
): SessionTree {
  let draft: SessionTree | undefined;
  for (const event of events) {
    const current = draft ?? tree;
    if (!changes(current, event)) continue;
    draft ??= cloneTree(tree);
    applyInPlace(draft, event);
  }
  return draft ?? tree;
}

function changes(tree: SessionTree, event: FleetEvent): boolean {
  if (event.type === "session_created") return tree.config === null;
  if (event.type === "config_change") return tree.config !== null && configPatchChanges(tree.config, event);
  if (event.type === "agent_change") {
    return (
      tree.config !== null &&
      (configPatchChanges(tree.config, event) || JSON.stringify(tree.agent) !== JSON.stringify(event.agent))
    );
  }
  if (event.type === "leaf") return !tree.leafEventIds.includes(event.meta.id);
  return ENTRY_TYPES.has(event.type) && "entry" in event && positionOf(tree.entries, event.entry.id) === undefined;
}

/**
 * Id → index lookup for `entries` arrays, kept outside the persisted tree. Arrays made by appending to
 * an array share its index (`ids` only grows; `tip` is the longest sharing array's length), so an id
 * found at an index at or past an array's length is not in that array. Appending to an array that is
 * not the tip (folding an older version again) starts a fresh index. An index is built on the first
 * lookup in an array longer than SCAN_LIMIT; shorter ones are scanned.
 */
interface EntryIndex {
  ids: Map<string, number>;
  tip: number;
}
const entryIndexes = new WeakMap<readonly SessionEntry[], EntryIndex>();

/** The last array looked up: a single owner folding one tree asks for the same index again and again. */
let lastEntries: readonly SessionEntry[] | undefined;
let lastIndex: EntryIndex | undefined;

/** Arrays this short are scanned for an id: a small session builds no index. */
const SCAN_LIMIT = 32;

/** The index of `entries` if one was built (or shared with it), else `undefined`. */
function builtIndexOf(entries: readonly SessionEntry[]): EntryIndex | undefined {
  if (entries === lastEntries && lastIndex) return lastIndex;
  const index = entryIndexes.get(entries);
  if (index) {
    lastEntries = entries;
    lastIndex = index;
  }
  return index;
}

function indexOf(entries: readonly SessionEntry[]): EntryIndex {
  let index = builtIndexOf(entries);
  if (!index) {
    index = { ids: new Map(), tip: entries.length };
    entries.forEach((entry, i) => {
      if (!index?.ids.has(entry.id)) index?.ids.set(entry.id, i);
    });
    entryIndexes.set(entries, index);
  }
  lastEntries = entries;
  lastIndex = index;
  return index;
}

/**
 * Indexes `entries` by `ids` (each entry's id, in order) without reading an entry: for a list read
 * back lazily (`lazyEntries`), whose id lookups then parse nothing.
 */
export function indexEntryIds(entries: readonly SessionEntry[], ids: readonly string[]): void {
  const index: EntryIndex = { ids: new Map(), tip: ids.length };
  ids.forEach((id, i) => {
    if (!index.ids.has(id)) index.ids.set(id, i);
  });
  entryIndexes.set(entries, index);
}

function forgetIndex(entries: readonly SessionEntry[]): void {
  entryIndexes.delete(entries);
  if (lastEntries === entries) lastEntries = lastIndex = undefined;
}

function positionOf(entries: readonly SessionEntry[], id: string): number | undefined {
  const built = builtIndexOf(entries);
  if (!built && entries.length <= SCAN_LIMIT) {
    for (let i = 0; i < entries.length; i++) if ((entries[i] as SessionEntry).id === id) return i;
    return undefined;
  }
  const position = (built ?? indexOf(entries)).ids.get(id);
  return position !== undefined && position < entries.length ? position : undefined;
}

function cloneTree(tree: SessionTree): SessionTree {
  const source = builtIndexOf(tree.entries);
  const entries = copyEntries(tree.entries);
  if (source?.tip === entries.length) entryIndexes.set(entries, source); // else built on first use
  return { ...tree, entries, labels: { ...tree.labels }, leafEventIds: tree.leafEventIds.slice() };
}

const CONFIG_CHANGE_FIELDS = ["systemPrompt", "steeringMode", "followUpMode", "toolExecution", "compaction"] as const;

/** A `config_change`, or an `agent_change` (its `systemPrompt` and `compaction`; a budget is the spend fold's). */
type ConfigChanging = EventOf<"config_change"> | EventOf<"agent_change">;
const fieldOf = (event: ConfigChanging, key: (typeof CONFIG_CHANGE_FIELDS)[number]): unknown =>
  (event as Partial<Record<string, unknown>>)[key];

/** Merge rule of `config_change` (and `agent_change`): fields present replace the config's; nothing is merged deeply. */
export function applyConfigChange(config: SessionConfig, event: ConfigChanging): SessionConfig {
  const next = { ...config };
  for (const key of CONFIG_CHANGE_FIELDS) {
    const value = fieldOf(event, key);
    if (value !== undefined) (next as Record<string, unknown>)[key] = value;
  }
  return next;
}

function configPatchChanges(config: SessionConfig, event: ConfigChanging): boolean {
  return CONFIG_CHANGE_FIELDS.some((key) => {
    const value = fieldOf(event, key);
    return value !== undefined && JSON.stringify(value) !== JSON.stringify(config[key]);
  });
}

function applyInPlace(tree: SessionTree, event: FleetEvent): void {
  if (event.type === "session_created") {
    tree.sessionId = event.meta.sessionId;
    tree.config = event.config;
    tree.forkedFrom = event.forkedFrom ?? null;
    if (event.agent) tree.agent = { name: event.agent.name, version: event.agent.version };
    return;
  }
  if (event.type === "config_change" || event.type === "agent_change") {
    if (tree.config) tree.config = applyConfigChange(tree.config, event);
    if (event.type === "agent_change") tree.agent = { name: event.agent.name, version: event.agent.version };
    return;
  }
  if (event.type === "leaf") {
    tree.leafId = event.targetId;
    tree.leafEventIds.push(event.meta.id);
    return;
  }
  const entry = entryFromEvent(event);
  if (!entry) return;
  const index = builtIndexOf(tree.entries);
  index?.ids.set(entry.id, tree.entries.length);
  tree.entries.push(entry);
  if (index) index.tip = tree.entries.length;
  tree.leafId = entry.id;
  if (entry.type === "label") {
    if (entry.label) setOwn(tree.labels, entry.targetId, entry.label);
    else deleteOwn(tree.labels, entry.targetId);
  } else if (entry.type === "session_info") {
    tree.name = entry.name.trim() || null;
  }
}

/** Why a lookup failed; the shape of a session-store `StoreError`. */
export interface TreeLookupError {
  ok: false;
  code: "not_found";
  error: string;
}

const notFound = (id: string): TreeLookupError => ({ ok: false, code: "not_found", error: `Entry ${id} not found` });

export function getEntry(tree: SessionTree, entryId: string): { ok: true; entry: SessionEntry } | TreeLookupError {
  const position = positionOf(tree.entries, entryId);
  const entry = position === undefined ? undefined : tree.entries[position];
  return entry ? { ok: true, entry } : notFound(entryId);
}

/**
 * The root→leaf path ending at `leafId` (default: the tree's leaf; `null` = the empty path).
 * An unknown id is an error (errors are data): `{ok: false, code: "not_found", error: "Entry <id> not found"}`.
 * A parent id that is not in the tree ends the walk (the entry is treated as a root), as is a cycle.
 */
export function getBranch(
  tree: SessionTree,
  leafId?: string | null,
): { ok: true; entries: SessionEntry[] } | TreeLookupError {
  const target = leafId === undefined ? tree.leafId : leafId;
  if (target === null) return { ok: true, entries: [] };
  const leaf = getEntry(tree, target);
  if (!leaf.ok) return leaf;
  const path: SessionEntry[] = [];
  const seen = new Set<string>();
  let current: SessionEntry | undefined = leaf.entry;
  while (current && !seen.has(current.id)) {
    seen.add(current.id);
    path.push(current);
    const parent: ReturnType<typeof getEntry> | undefined =
      current.parentId === null ? undefined : getEntry(tree, current.parentId);
    current = parent?.ok ? parent.entry : undefined;
  }
  return { ok: true, entries: path.reverse() };
}

/** The whole tree: entries in creation order, and its shape. */
export interface TreeView {
  entries: SessionEntry[];
  leafId: string | null;
  labels: OwnRecord<string>;
  name: string | null;
  /** Entries whose parent is `null` or not in the tree, in creation order. */
  roots: string[];
  /** Parent id → child ids in creation order (only parents that have children). */
  children: OwnRecord<string[]>;
}

export function getTree(tree: SessionTree): TreeView {
  const roots: string[] = [];
  const children: OwnRecord<string[]> = {};
  for (const entry of tree.entries) {
    const parentId = entry.parentId;
    if (parentId === null || parentId === entry.id || positionOf(tree.entries, parentId) === undefined) {
      roots.push(entry.id);
      continue;
    }
    const siblings = getOwn(children, parentId);
    if (siblings) siblings.push(entry.id);
    else setOwn(children, parentId, [entry.id]);
  }
  return { entries: tree.entries, leafId: tree.leafId, labels: tree.labels, name: tree.name, roots, children };
}

/** The context at a leaf; the shape of the session store's `get_context` reply without `seq`. */
export interface SessionContext {
  ok: true;
  messages: ContextMessage[];
  model: ModelRef | null;
  thinkingLevel: ThinkingLevel;
  activeToolNames: string[] | null;
  leafId: string | null;
}

/**
 * pi's `buildSessionContext` at `leafId` (default: the tree's leaf), see `buildContextFromPath`.
 * Settings default to the session config (`model`, `thinkingLevel`, `activeTools`), else to no
 * model, "off" and every tool. `leafId: null` gives no messages and those defaults.
 * Unlike pi (which falls back to the last entry) an unknown leaf id is an error:
 * `{ok: false, code: "not_found", error: "Entry <id> not found"}`. Contract: never throws.
 * At the tree's own leaf it copies `contextAtLeaf` (the messages are the same objects).
 */
export function buildContext(tree: SessionTree, leafId?: string | null): SessionContext | TreeLookupError {
  const atLeaf = leafId === undefined || leafId === tree.leafId;
  let ctx: Readonly<LeafContext>;
  if (atLeaf) {
    const leaf = contextAtLeaf(tree);
    if (!leaf) return notFound(tree.leafId as string);
    ctx = leaf;
  } else {
    const branch = getBranch(tree, leafId);
    if (!branch.ok) return branch;
    ctx = buildContextFromPath(branch.entries, contextDefaults(tree.config));
  }
  return {
    ok: true,
    messages: ctx.messages.slice(),
    model: ctx.model,
    thinkingLevel: ctx.thinkingLevel,
    activeToolNames: ctx.activeToolNames === null ? null : [...ctx.activeToolNames],
    leafId: atLeaf ? tree.leafId : (leafId as string | null),
  };
}

/** The context at a tree's leaf, read-only (see `contextAtLeaf`). */
export interface LeafContext {
  readonly messages: readonly ContextMessage[];
  readonly model: ModelRef | null;
  readonly thinkingLevel: ThinkingLevel;
  readonly activeToolNames: readonly string[] | null;
}

/** A tree's context at its leaf, as last derived; kept outside the persisted tree, like the id index. */
interface LeafContextMemo {
  leafId: string | null;
  /** `entries.length` when derived. */
  entries: number;
  config: SessionConfig | null;
  context: PathContext;
}
const leafContexts = new WeakMap<SessionTree, LeafContextMemo>();

/**
 * `buildContext(tree)` without the copies: derived once per tree object and then extended by the
 * entries appended on the leaf since the last call, so a tree folded in place pays for each entry
 * once. Derived again after anything else (a compaction entry, a `leaf` move, a `config_change`).
 * `undefined` when the leaf is not in the tree. Read-only: valid until the tree's next change.
 */
export function contextAtLeaf(tree: SessionTree): LeafContext | undefined {
  if (tree.entries.length === 0 && tree.leafId === null) return buildContextFromPath([], contextDefaults(tree.config));
  const memo = leafContexts.get(tree);
  if (memo && memo.config === tree.config && extendToLeaf(memo, tree)) return memo.context;
  const branch = getBranch(tree);
  if (!branch.ok) return undefined;
  const context = buildContextFromPath(branch.entries, contextDefaults(tree.config));
  leafContexts.set(tree, { leafId: tree.leafId, entries: tree.entries.length, config: tree.config, context });
  return context;
}

/** Extends `memo` when every entry added since it chains from its leaf to the tree's leaf. */
function extendToLeaf(memo: LeafContextMemo, tree: SessionTree): boolean {
  const { entries } = tree;
  if (memo.entries === entries.length) return memo.leafId === tree.leafId;
  let leaf = memo.leafId;
  for (let i = memo.entries; i < entries.length; i++) {
    const entry = entries[i] as SessionEntry;
    if (entry.parentId !== leaf || entry.type === "compaction") return false;
    leaf = entry.id;
  }
  if (leaf !== tree.leafId) return false;
  for (let i = memo.entries; i < entries.length; i++) extendPathContext(memo.context, entries[i] as SessionEntry);
  memo.leafId = leaf;
  memo.entries = entries.length;
  return true;
}

export function contextDefaults(config: SessionConfig | null): ContextDefaults {
  if (!config) return NO_CONTEXT_DEFAULTS;
  return { model: config.model, thinkingLevel: config.thinkingLevel, activeToolNames: config.activeTools };
}
