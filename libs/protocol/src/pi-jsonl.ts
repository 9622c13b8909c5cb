import { z } from "zod";
import { formatIssues } from "./codec.js";
import { type CommandOf, FleetCommand } from "./commands.js";
import type { SessionConfigPatch } from "./config.js";
import { ToolResultContentBlock } from "./content.js";
import { SessionEntry } from "./session-entry.js";

/**
 * pi v3 session files (coding-agent `SessionManager`, pi-semantics §7): one header line, then one
 * entry per line with ISO-8601 `timestamp`s (message timestamps inside entries stay epoch ms).
 *
 * Mapping contract (Fleet ↔ pi):
 * - Fleet ids are kept (pi's 8-hex ids are not required by pi's loader).
 * - `active_tools_change` has no pi 0.73 type: it is exported as a `custom` entry of customType
 *   `fleet:active_tools_change` with `data: {toolNames}`, and imported back.
 * - `label: null` is exported without a `label` field (pi: undefined clears).
 * - pi's leaf on load is the last entry in file order, so the export moves the leaf entry to the end
 *   of the file when it is not already last. Every other entry keeps stream order. A `null` leaf
 *   (navigated before the first entry) cannot be expressed in v3 and is exported as if the leaf
 *   were the last entry. (Edge: when the moved leaf is a `label` or `session_info` entry and a later
 *   one exists for the same target / name, pi's "latest in file order wins" then picks the moved one.)
 * - Import accepts any line order (pi does), returns the entries parents-first (stable in file order)
 *   and the leaf pi would pick: the last entry in file order, or the target of a trailing harness
 *   `leaf` line.
 * - A pi `custom` entry without `data` is imported with `data: null`.
 * - pi `bashExecution` messages become `custom_message` entries of customType `bashExecution`
 *   (content = pi's `bashExecutionToText`, `details` = the original message), or `custom` entries when
 *   pi excluded them from the context. A `custom`-role message entry becomes a `custom_message`.
 */
export const PI_SESSION_VERSION = 3;
export const FLEET_ACTIVE_TOOLS_CUSTOM_TYPE = "fleet:active_tools_change";
export const PI_BASH_EXECUTION_CUSTOM_TYPE = "bashExecution";

export interface PiExportInput {
  /** Becomes the header `id`. */
  sessionId: string;
  /** Session creation time (ms), the header `timestamp`. */
  createdAt: number;
  cwd?: string;
  parentSession?: string;
  /** Entries in stream order (parents before children). */
  entries: readonly SessionEntry[];
  leafId: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** One pi v3 JSON object per Fleet entry, with pi's key order (`type, id, parentId, timestamp, …`). */
export function toPiEntry(entry: SessionEntry): Record<string, unknown> {
  const base = { type: entry.type, id: entry.id, parentId: entry.parentId, timestamp: iso(entry.timestamp) };
  switch (entry.type) {
    case "message":
      return { ...base, message: entry.message };
    case "custom_message":
      return {
        ...base,
        customType: entry.customType,
        content: entry.content,
        display: entry.display,
        ...(entry.details !== undefined ? { details: entry.details } : {}),
      };
    case "model_change":
      return { ...base, provider: entry.provider, modelId: entry.modelId };
    case "thinking_level_change":
      return { ...base, thinkingLevel: entry.thinkingLevel };
    case "active_tools_change":
      return {
        ...base,
        type: "custom",
        customType: FLEET_ACTIVE_TOOLS_CUSTOM_TYPE,
        data: { toolNames: entry.toolNames },
      };
    case "compaction":
      return {
        ...base,
        summary: entry.summary,
        firstKeptEntryId: entry.firstKeptEntryId,
        tokensBefore: entry.tokensBefore,
        ...(entry.details !== undefined ? { details: entry.details } : {}),
      };
    case "branch_summary":
      return { ...base, fromId: entry.fromId, summary: entry.summary };
    case "label":
      return { ...base, targetId: entry.targetId, ...(entry.label !== null ? { label: entry.label } : {}) };
    case "session_info":
      return { ...base, name: entry.name };
    case "custom":
      return { ...base, customType: entry.customType, ...(entry.data !== undefined ? { data: entry.data } : {}) };
  }
}

/** Stream order, with the leaf entry moved last so that pi's loader picks it as the leaf. */
export function piFileOrder(entries: readonly SessionEntry[], leafId: string | null): SessionEntry[] {
  const leafIndex = leafId === null ? -1 : entries.findIndex((e) => e.id === leafId);
  if (leafIndex < 0 || leafIndex === entries.length - 1) return [...entries];
  const leaf = entries[leafIndex] as SessionEntry;
  return [...entries.slice(0, leafIndex), ...entries.slice(leafIndex + 1), leaf];
}

/** The whole pi v3 JSONL text: header line plus one line per entry, each ending in `\n`. */
export function exportPiJsonl(input: PiExportInput): string {
  const header = {
    type: "session",
    version: PI_SESSION_VERSION,
    id: input.sessionId,
    timestamp: iso(input.createdAt),
    cwd: input.cwd ?? "",
    ...(input.parentSession !== undefined ? { parentSession: input.parentSession } : {}),
  };
  const lines = [JSON.stringify(header)];
  for (const entry of piFileOrder(input.entries, input.leafId)) lines.push(JSON.stringify(toPiEntry(entry)));
  return `${lines.join("\n")}\n`;
}

// ---------------------------------------------------------------------------------------------
// Import

export interface PiLineIssue {
  /** 1-based line number in the file. */
  line: number;
  message: string;
}

export interface PiSessionHeader {
  id: string;
  /** ms */
  timestamp: number;
  cwd: string;
  parentSession?: string;
}

export type PiImport =
  | { ok: true; header: PiSessionHeader; entries: SessionEntry[]; leafId: string | null }
  | { ok: false; error: string; issues: PiLineIssue[] };

const IsoTimestamp = z.string().refine((s) => !Number.isNaN(Date.parse(s)), "not an ISO-8601 timestamp");

const PiHeader = z.looseObject({
  type: z.literal("session"),
  version: z.literal(PI_SESSION_VERSION, {
    message: `only pi session format version ${PI_SESSION_VERSION} is supported`,
  }),
  id: z.string().min(1),
  timestamp: IsoTimestamp,
  cwd: z.string(),
  parentSession: z.string().optional(),
});

const PiBase = z.looseObject({
  type: z.string(),
  id: z.string().min(1),
  parentId: z.string().min(1).nullable(),
  timestamp: IsoTimestamp,
});

const PiBashExecution = z.looseObject({
  role: z.literal("bashExecution"),
  command: z.string(),
  output: z.string().optional(),
  exitCode: z.number().nullable().optional(),
  cancelled: z.boolean().optional(),
  truncated: z.boolean().optional(),
  fullOutputPath: z.string().optional(),
  excludeFromContext: z.boolean().optional(),
  timestamp: z.number(),
});
type PiBashExecution = z.infer<typeof PiBashExecution>;

const PiCustomRoleMessage = z.looseObject({
  role: z.literal("custom"),
  customType: z.string().min(1),
  content: z.union([z.string(), z.array(ToolResultContentBlock)]),
  display: z.boolean(),
  details: z.unknown().optional(),
});

const PiLeafLine = z.object({ type: z.literal("leaf"), targetId: z.string().min(1).nullable() }).loose();

/** pi's `bashExecutionToText` (coding-agent 0.73 `messages.js`), the text the LLM sees. */
export function bashExecutionToText(msg: PiBashExecution): string {
  let text = `Ran \`${msg.command}\`\n`;
  text += msg.output ? `\`\`\`\n${msg.output}\n\`\`\`` : "(no output)";
  if (msg.cancelled) text += "\n\n(command cancelled)";
  else if (msg.exitCode !== null && msg.exitCode !== undefined && msg.exitCode !== 0) {
    text += `\n\nCommand exited with code ${msg.exitCode}`;
  }
  if (msg.truncated && msg.fullOutputPath) text += `\n\n[Output truncated. Full output: ${msg.fullOutputPath}]`;
  return text;
}

type Converted = { ok: true; entry: SessionEntry } | { ok: false; message: string };

/** Maps one pi entry object (already JSON-parsed) to a validated Fleet entry. */
export function fromPiEntry(raw: unknown): Converted {
  const base = PiBase.safeParse(raw);
  if (!base.success) return { ok: false, message: describeZod(base.error) };
  const { timestamp, ...rest } = base.data;
  const common = { ...rest, timestamp: Date.parse(timestamp) };
  let candidate: Record<string, unknown> = common;
  if (rest.type === "message") {
    const message = (rest as { message?: unknown }).message;
    const role = (message as { role?: unknown } | undefined)?.role;
    if (role === "bashExecution") {
      const bash = PiBashExecution.safeParse(message);
      if (!bash.success) return { ok: false, message: `message: ${describeZod(bash.error)}` };
      candidate = bash.data.excludeFromContext
        ? { ...idOf(common), type: "custom", customType: PI_BASH_EXECUTION_CUSTOM_TYPE, data: bash.data }
        : {
            ...idOf(common),
            type: "custom_message",
            customType: PI_BASH_EXECUTION_CUSTOM_TYPE,
            content: [{ type: "text", text: bashExecutionToText(bash.data) }],
            display: true,
            details: bash.data,
          };
    } else if (role === "custom") {
      const custom = PiCustomRoleMessage.safeParse(message);
      if (!custom.success) return { ok: false, message: `message: ${describeZod(custom.error)}` };
      const { customType, content, display, details } = custom.data;
      candidate = {
        ...idOf(common),
        type: "custom_message",
        customType,
        content,
        display,
        ...(details !== undefined ? { details } : {}),
      };
    } else if (role === "branchSummary" || role === "compactionSummary") {
      return { ok: false, message: `message: role "${role}" is not allowed in a message entry` };
    }
  } else if (rest.type === "label") {
    const label = (rest as { label?: unknown }).label;
    // pi: an undefined or empty label clears.
    candidate = { ...common, label: label === undefined || label === null || label === "" ? null : label };
  } else if (rest.type === "session_info") {
    const name = (rest as { name?: unknown }).name;
    candidate = { ...common, name: name === undefined ? "" : name };
  } else if (
    rest.type === "custom" &&
    (rest as { customType?: unknown }).customType === FLEET_ACTIVE_TOOLS_CUSTOM_TYPE
  ) {
    const data = (rest as { data?: unknown }).data as { toolNames?: unknown } | undefined;
    candidate = { ...idOf(common), type: "active_tools_change", toolNames: data?.toolNames };
  } else if (rest.type === "custom" && !Object.hasOwn(rest, "data")) {
    // pi's `data` is optional; Fleet's custom entries always carry it.
    candidate = { ...common, data: null };
  } else if (rest.type === "active_tools_change") {
    return { ok: false, message: 'unknown entry type "active_tools_change"' };
  }
  const checked = SessionEntry.safeParse(candidate);
  if (checked.success) return { ok: true, entry: checked.data };
  const typeIssue = checked.error.issues.find((i) => i.path.length === 1 && i.path[0] === "type");
  if (typeIssue) return { ok: false, message: `unknown entry type ${JSON.stringify(rest.type)}` };
  return { ok: false, message: describeZod(checked.error) };
}

const idOf = (c: { id: string; parentId: string | null; timestamp: number }) => ({
  id: c.id,
  parentId: c.parentId,
  timestamp: c.timestamp,
});

function describeZod(error: z.ZodError): string {
  return formatIssues(error.issues)
    .map((i) => (i.path ? `${i.path}: ${i.message}` : i.message))
    .join("; ");
}

/**
 * Parses a pi v3 session file. Unlike pi (which skips them), malformed lines are errors: every bad
 * line is reported with its 1-based line number, and nothing is returned unless the whole file is
 * valid. Blank lines are ignored.
 */
export function importPiJsonl(text: string): PiImport {
  const issues: PiLineIssue[] = [];
  const rawLines = text.split("\n");
  let header: PiSessionHeader | undefined;
  const fileOrder: SessionEntry[] = [];
  const lineOf = new Map<string, number>();
  let leafOverride: { index: number; targetId: string | null } | undefined;
  for (let i = 0; i < rawLines.length; i++) {
    const line = (rawLines[i] as string).replace(/\r$/, "");
    if (line.trim() === "") continue;
    const lineNo = i + 1;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      issues.push({ line: lineNo, message: `not JSON: ${(err as Error).message}` });
      if (header === undefined) break;
      continue;
    }
    if (header === undefined) {
      const parsed = PiHeader.safeParse(value);
      if (!parsed.success) {
        issues.push({ line: lineNo, message: `invalid session header: ${describeZod(parsed.error)}` });
        break;
      }
      const { id, timestamp, cwd, parentSession } = parsed.data;
      header = { id, timestamp: Date.parse(timestamp), cwd, ...(parentSession !== undefined ? { parentSession } : {}) };
      continue;
    }
    const leafLine = PiLeafLine.safeParse(value);
    if (leafLine.success) {
      leafOverride = { index: fileOrder.length, targetId: leafLine.data.targetId };
      continue;
    }
    const converted = fromPiEntry(value);
    if (!converted.ok) {
      issues.push({ line: lineNo, message: converted.message });
      continue;
    }
    if (lineOf.has(converted.entry.id)) {
      issues.push({
        line: lineNo,
        message: `duplicate entry id ${converted.entry.id} (first on line ${lineOf.get(converted.entry.id)})`,
      });
      continue;
    }
    lineOf.set(converted.entry.id, lineNo);
    fileOrder.push(converted.entry);
  }
  if (header === undefined && issues.length === 0) issues.push({ line: 1, message: "missing session header" });
  if (issues.length === 0) issues.push(...checkTree(fileOrder, lineOf));
  let leafId: string | null = fileOrder.at(-1)?.id ?? null;
  if (leafOverride !== undefined && leafOverride.index === fileOrder.length) leafId = leafOverride.targetId;
  if (issues.length === 0 && leafId !== null && !lineOf.has(leafId)) {
    issues.push({ line: 0, message: `leaf ${leafId} is not an entry of the file` });
  }
  if (issues.length > 0 || header === undefined) {
    return { ok: false, error: issues.map((i) => `line ${i.line}: ${i.message}`).join("\n"), issues };
  }
  return { ok: true, header, entries: parentsFirst(fileOrder), leafId };
}

/** Known parents and no cycles (ids are already unique). */
function checkTree(entries: readonly SessionEntry[], lineOf: ReadonlyMap<string, number>): PiLineIssue[] {
  const issues: PiLineIssue[] = [];
  const byId = new Map(entries.map((e) => [e.id, e] as const));
  for (const e of entries) {
    if (e.parentId !== null && !byId.has(e.parentId)) {
      issues.push({ line: lineOf.get(e.id) ?? 0, message: `parentId ${e.parentId} is not an entry of the file` });
    }
  }
  if (issues.length > 0) return issues;
  const rooted = new Set<string>();
  for (const e of entries) {
    const path = new Set<string>();
    let cur: SessionEntry | undefined = e;
    while (cur && !rooted.has(cur.id)) {
      if (path.has(cur.id)) {
        issues.push({ line: lineOf.get(e.id) ?? 0, message: `the parent chain of ${e.id} has a cycle` });
        return issues;
      }
      path.add(cur.id);
      cur = cur.parentId === null ? undefined : byId.get(cur.parentId);
    }
    for (const id of path) rooted.add(id);
  }
  return issues;
}

/** A stable topological order: file order, each child deferred until its parent has been emitted. */
function parentsFirst(entries: readonly SessionEntry[]): SessionEntry[] {
  const children = new Map<string, SessionEntry[]>();
  const ids = new Set(entries.map((e) => e.id));
  const out: SessionEntry[] = [];
  const emitted = new Set<string>();
  const emit = (e: SessionEntry) => {
    const stack = [e];
    while (stack.length > 0) {
      const next = stack.pop() as SessionEntry;
      out.push(next);
      emitted.add(next.id);
      const waiting = children.get(next.id);
      if (waiting) {
        children.delete(next.id);
        for (let i = waiting.length - 1; i >= 0; i--) stack.push(waiting[i] as SessionEntry);
      }
    }
  };
  for (const e of entries) {
    if (e.parentId === null || emitted.has(e.parentId) || !ids.has(e.parentId)) emit(e);
    else {
      const list = children.get(e.parentId) ?? [];
      list.push(e);
      children.set(e.parentId, list);
    }
  }
  return out;
}

/**
 * Builds the `import_session` command for a pi v3 file. The loop re-mints ids on import; this only
 * parses and validates.
 */
export function piJsonlToImportCommand(
  text: string,
  envelope: { id: string; sessionId: string; ts?: number; config?: SessionConfigPatch },
): { ok: true; value: CommandOf<"import_session"> } | { ok: false; error: string; issues: PiLineIssue[] } {
  const parsed = importPiJsonl(text);
  if (!parsed.ok) return parsed;
  const command = {
    type: "import_session" as const,
    id: envelope.id,
    sessionId: envelope.sessionId,
    ...(envelope.ts !== undefined ? { ts: envelope.ts } : {}),
    ...(envelope.config !== undefined ? { config: envelope.config } : {}),
    entries: parsed.entries,
    leafId: parsed.leafId,
  };
  const checked = FleetCommand.safeParse(command);
  if (!checked.success) {
    const message = describeZod(checked.error);
    return { ok: false, error: message, issues: [{ line: 0, message }] };
  }
  return { ok: true, value: checked.data as CommandOf<"import_session"> };
}
