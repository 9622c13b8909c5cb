// Compaction planning (pi-semantics §8): thresholds, cut point, what to summarise, file lists.
import type { ContextMessage } from "../messages.js";
import type { SessionEntry } from "../session-entry.js";
import { buildContextFromPath, entryToContextMessage } from "./build-context.js";
import { estimateContextTokens, estimateTokens } from "./token-estimate.js";

/** pi's compaction settings defaults. */
export const COMPACTION_DEFAULTS = { reserveTokens: 16_384, keepRecentTokens: 20_000 } as const;

/** pi's threshold: compact when the context exceeds the window minus the reserve. */
export function shouldCompact(contextTokens: number, contextWindow: number, reserveTokens: number): boolean {
  return contextTokens > contextWindow - reserveTokens;
}

/** Cut points: user and assistant `message` entries, `custom_message` and `branch_summary` entries. */
function isCutPoint(entry: SessionEntry): boolean {
  if (entry.type === "message") return entry.message.role !== "toolResult";
  return entry.type === "custom_message" || entry.type === "branch_summary";
}

/** Turn starts: user `message` entries, `custom_message` and `branch_summary` entries. */
function isTurnStart(entry: SessionEntry): boolean {
  if (entry.type === "message") return entry.message.role === "user";
  return entry.type === "custom_message" || entry.type === "branch_summary";
}

/** Index of the turn start at or before `entryIndex`, not before `startIndex`; -1 when there is none. */
export function findTurnStartIndex(entries: readonly SessionEntry[], entryIndex: number, startIndex: number): number {
  for (let i = entryIndex; i >= startIndex; i--) if (isTurnStart(entries[i] as SessionEntry)) return i;
  return -1;
}

export interface CutPoint {
  /** First entry kept verbatim. */
  firstKeptEntryIndex: number;
  /** For a split turn, the turn start before the cut; else -1. */
  turnStartIndex: number;
  /** The cut is inside a turn: the cut entry is not a user message and a turn start precedes it. */
  isSplitTurn: boolean;
}

/**
 * pi's `findCutPoint` over `entries[startIndex, endIndex)`: walk back from the end summing the
 * token estimates of `message` entries; where the sum first reaches `keepRecentTokens` (index i),
 * cut at the first cut point ≥ i; when the budget is never reached, cut at the first cut point
 * (keep everything). Then move the cut back over non-message entries until a `message` or
 * `compaction` entry. A toolResult is never a cut point, so an assistant keeps its results.
 *
 * Fleet fix of pi's defect (#7201, #8498): when the budget is reached inside trailing tool results
 * and no cut point follows, pi keeps everything; here the cut goes to the last cut point before i
 * (the assistant message that issued those calls), so older history can still be summarised.
 */
export function findCutPoint(
  entries: readonly SessionEntry[],
  startIndex: number,
  endIndex: number,
  keepRecentTokens: number,
): CutPoint {
  const cutPoints: number[] = [];
  for (let i = startIndex; i < endIndex; i++) if (isCutPoint(entries[i] as SessionEntry)) cutPoints.push(i);
  if (cutPoints.length === 0) return { firstKeptEntryIndex: startIndex, turnStartIndex: -1, isSplitTurn: false };

  let cutIndex = cutPoints[0] as number;
  let accumulated = 0;
  for (let i = endIndex - 1; i >= startIndex; i--) {
    const entry = entries[i] as SessionEntry;
    if (entry.type !== "message") continue;
    accumulated += estimateTokens(entry.message);
    if (accumulated >= keepRecentTokens) {
      const after = cutPoints.find((c) => c >= i);
      const before = cutPoints.findLast((c) => c < i);
      cutIndex = after ?? before ?? cutIndex;
      break;
    }
  }

  while (cutIndex > startIndex) {
    const previous = entries[cutIndex - 1] as SessionEntry;
    if (previous.type === "compaction" || previous.type === "message") break;
    cutIndex--;
  }

  const cutEntry = entries[cutIndex] as SessionEntry;
  const isUserMessage = cutEntry.type === "message" && cutEntry.message.role === "user";
  const turnStartIndex = isUserMessage ? -1 : findTurnStartIndex(entries, cutIndex, startIndex);
  return { firstKeptEntryIndex: cutIndex, turnStartIndex, isSplitTurn: !isUserMessage && turnStartIndex !== -1 };
}

/** What a compaction summarises, and what it keeps. */
export interface CompactionPlan {
  ok: true;
  firstKeptEntryId: string;
  /** History to summarise (for a split turn: up to the turn start). */
  messages: ContextMessage[];
  /** For a split turn: the turn's messages before the cut, summarised separately; else empty. */
  turnPrefixMessages: ContextMessage[];
  isSplitTurn: boolean;
  /** Estimated context size before compaction (`estimateContextTokens` of the built context). */
  tokensBefore: number;
  /** The previous compaction's summary, for an iterative (update) summary. */
  previousSummary: string | undefined;
  /** Files only read, sorted. */
  readFiles: string[];
  /** Files written or edited, sorted. */
  modifiedFiles: string[];
}

export interface CompactionRefusal {
  ok: false;
  code: "already_compacted" | "nothing_to_compact";
  /** pi's error text. */
  error: string;
}

/**
 * pi's `prepareCompaction` over a root→leaf path. Summarising starts at the previous compaction's
 * first kept entry (or right after that compaction when that id is not on the path), so kept
 * messages can be re-kept or summarised again; compaction entries are never summarised.
 * File lists: `path` arguments of `read`, `write` and `edit` tool calls in the summarised messages
 * (and turn prefix), plus the previous compaction's `details.readFiles` / `details.modifiedFiles`.
 *
 * Refusals (errors are data): the path ends with a compaction → `already_compacted`
 * ("Already compacted"); an empty path, or nothing before the cut to summarise →
 * `nothing_to_compact` ("Nothing to compact (session too small)"). The latter differs from pi,
 * which would summarise an empty conversation. Contract: never throws.
 */
export function prepareCompaction(
  path: readonly SessionEntry[],
  keepRecentTokens: number = COMPACTION_DEFAULTS.keepRecentTokens,
): CompactionPlan | CompactionRefusal {
  if (path.at(-1)?.type === "compaction") return { ok: false, code: "already_compacted", error: "Already compacted" };
  const nothing: CompactionRefusal = {
    ok: false,
    code: "nothing_to_compact",
    error: "Nothing to compact (session too small)",
  };
  if (path.length === 0) return nothing;

  const prevIndex = path.findLastIndex((e) => e.type === "compaction");
  const prev = path[prevIndex];
  let boundaryStart = 0;
  let previousSummary: string | undefined;
  if (prev?.type === "compaction") {
    previousSummary = prev.summary;
    const keptIndex = path.findIndex((e) => e.id === prev.firstKeptEntryId);
    boundaryStart = keptIndex >= 0 ? keptIndex : prevIndex + 1;
  }
  const tokensBefore = estimateContextTokens(buildContextFromPath(path).messages).tokens;
  const cut = findCutPoint(path, boundaryStart, path.length, keepRecentTokens);
  const firstKept = path[cut.firstKeptEntryIndex];
  if (!firstKept) return nothing;

  const historyEnd = cut.isSplitTurn ? cut.turnStartIndex : cut.firstKeptEntryIndex;
  const messages = messagesOf(path, boundaryStart, historyEnd);
  const turnPrefixMessages = cut.isSplitTurn ? messagesOf(path, cut.turnStartIndex, cut.firstKeptEntryIndex) : [];
  if (messages.length === 0 && turnPrefixMessages.length === 0) return nothing;

  const files = { read: new Set<string>(), modified: new Set<string>() };
  if (prev?.type === "compaction") addPreviousFiles(prev.details, files);
  for (const m of [...messages, ...turnPrefixMessages]) addToolCallFiles(m, files);
  const { readFiles, modifiedFiles } = computeFileLists(files.read, files.modified);

  return {
    ok: true,
    firstKeptEntryId: firstKept.id,
    messages,
    turnPrefixMessages,
    isSplitTurn: cut.isSplitTurn,
    tokensBefore,
    previousSummary,
    readFiles,
    modifiedFiles,
  };
}

function messagesOf(path: readonly SessionEntry[], from: number, to: number): ContextMessage[] {
  const out: ContextMessage[] = [];
  for (let i = from; i < to; i++) {
    const entry = path[i] as SessionEntry;
    if (entry.type === "compaction") continue;
    const message = entryToContextMessage(entry);
    if (message) out.push(message);
  }
  return out;
}

function addPreviousFiles(details: unknown, files: { read: Set<string>; modified: Set<string> }): void {
  if (typeof details !== "object" || details === null) return;
  const { readFiles, modifiedFiles } = details as { readFiles?: unknown; modifiedFiles?: unknown };
  if (Array.isArray(readFiles)) for (const f of readFiles) if (typeof f === "string") files.read.add(f);
  if (Array.isArray(modifiedFiles)) for (const f of modifiedFiles) if (typeof f === "string") files.modified.add(f);
}

function addToolCallFiles(message: ContextMessage, files: { read: Set<string>; modified: Set<string> }): void {
  if (message.role !== "assistant") return;
  for (const block of message.content) {
    if (block.type !== "toolCall") continue;
    const path = block.arguments.path;
    if (typeof path !== "string" || path === "") continue;
    if (block.name === "read") files.read.add(path);
    else if (block.name === "write" || block.name === "edit") files.modified.add(path);
  }
}

/** Read-only files (read and never modified) and modified files, both sorted. */
export function computeFileLists(
  read: Iterable<string>,
  modified: Iterable<string>,
): { readFiles: string[]; modifiedFiles: string[] } {
  const modifiedSet = new Set(modified);
  const readFiles = [...new Set(read)].filter((f) => !modifiedSet.has(f)).sort();
  return { readFiles, modifiedFiles: [...modifiedSet].sort() };
}

/**
 * The suffix pi appends to a compaction summary: `\n\n<read-files>\n…\n</read-files>` and/or
 * `<modified-files>` blocks separated by a blank line; `""` when both lists are empty.
 */
export function formatFileLists(readFiles: readonly string[], modifiedFiles: readonly string[]): string {
  const sections: string[] = [];
  if (readFiles.length > 0) sections.push(`<read-files>\n${readFiles.join("\n")}\n</read-files>`);
  if (modifiedFiles.length > 0) sections.push(`<modified-files>\n${modifiedFiles.join("\n")}\n</modified-files>`);
  return sections.length === 0 ? "" : `\n\n${sections.join("\n\n")}`;
}
