/**
 * The search index's members of one session (pure). A member is `<text>\0<kind>\0<sessionId>`,
 * all in one sorted set with score 0, so a lexicographic range `[q, q\xff)` finds every session
 * with a text starting with `q`, reading about as many members as it returns (PROTOCOL change 44).
 * Texts are normalized (`normalizeSearchText`); the session id is the last field, kept as it is.
 */
import type { ProjectedSession } from "./session-state.js";

export type SearchKind = "id" | "name" | "label";

/** Longest text kept per member (a longer one is searchable by its first characters). */
export const MAX_SEARCH_TEXT = 100;
/** Word starts of a name or id that are indexed (a longer one is searchable from its first 16 words). */
export const MAX_NAME_WORDS = 16;

const SEP = "\u0000";

/** Lower-cased, control characters as spaces, runs of whitespace as one, trimmed, cut to the limit. */
export function normalizeSearchText(text: string): string {
  return (
    text
      .toLowerCase()
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is replaced.
      .replace(/[\u0000-\u001f\u007f]/g, " ")
      .replace(/\s+/g, " ")
      .trim()
      .slice(0, MAX_SEARCH_TEXT)
  );
}

export function searchMember(text: string, kind: SearchKind, sessionId: string): string {
  return `${text}${SEP}${kind}${SEP}${sessionId}`;
}

/** The session id of a member (its last field), or null for a malformed one. */
export function sessionOfMember(member: string): string | null {
  const at = member.lastIndexOf(SEP);
  return at < 0 || at === member.length - 1 ? null : member.slice(at + 1);
}

/** Every position where a word starts: a letter or digit after a non-letter-or-digit (or at 0). */
function wordStarts(text: string): number[] {
  const starts: number[] = [];
  const word = /[\p{L}\p{N}]/u;
  for (let i = 0; i < text.length && starts.length < MAX_NAME_WORDS; i++) {
    if (word.test(text[i] as string) && (i === 0 || !word.test(text[i - 1] as string))) starts.push(i);
  }
  return starts;
}

/**
 * The members of a session: its id and its name, each from every word start on ("fix the build" is
 * found by "fix", "the" and "build"; "s-acme-7" by "s", "acme" and "7"), and each distinct label.
 * None for a session with no event applied.
 */
export function searchMembers(s: ProjectedSession): string[] {
  if (s.lastSeq === 0) return [];
  const members = new Set<string>();
  const id = normalizeSearchText(s.sessionId);
  for (const start of wordStarts(id)) members.add(searchMember(id.slice(start), "id", s.sessionId));
  const name = normalizeSearchText(s.tree.name ?? "");
  for (const start of wordStarts(name)) members.add(searchMember(name.slice(start), "name", s.sessionId));
  for (const label of new Set(Object.values(s.tree.labels))) {
    const text = normalizeSearchText(label);
    if (text) members.add(searchMember(text, "label", s.sessionId));
  }
  return [...members];
}
