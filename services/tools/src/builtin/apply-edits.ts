// Pure text replacement for the edit tool, with pi's error texts.

export interface TextEdit {
  oldText: string;
  newText: string;
}

export interface AppliedEdits {
  content: string;
  /** The lines each edit touches: `-<n> old line` then `+<n> new line` (n = line number in the old / new file). */
  diff: string;
  /** 1-based line of the first change in the new content. */
  firstChangedLine: number;
}

/**
 * Applies every edit to `content` at once. Each `oldText` must be non-empty and occur exactly once
 * in the original; edits must not overlap; the result must differ. Throws an Error with pi's
 * message otherwise (nothing is applied).
 */
export function applyEdits(content: string, edits: readonly TextEdit[], path: string): AppliedEdits {
  const many = edits.length > 1;
  const matches = edits.map((edit, i) => {
    if (edit.oldText.length === 0) {
      throw new Error(
        many ? `edits[${i}].oldText must not be empty in ${path}.` : `oldText must not be empty in ${path}.`,
      );
    }
    const index = content.indexOf(edit.oldText);
    if (index === -1) {
      throw new Error(
        many
          ? `Could not find edits[${i}] in ${path}. The oldText must match exactly including all whitespace and newlines.`
          : `Could not find the exact text in ${path}. The old text must match exactly including all whitespace and newlines.`,
      );
    }
    const occurrences = countOccurrences(content, edit.oldText);
    if (occurrences > 1) {
      throw new Error(
        many
          ? `Found ${occurrences} occurrences of edits[${i}] in ${path}. Each oldText must be unique. Please provide more context to make it unique.`
          : `Found ${occurrences} occurrences of the text in ${path}. The text must be unique. Please provide more context to make it unique.`,
      );
    }
    return { i, index, length: edit.oldText.length, newText: edit.newText };
  });
  const sorted = [...matches].sort((a, b) => a.index - b.index);
  for (let k = 1; k < sorted.length; k++) {
    const prev = sorted[k - 1];
    const cur = sorted[k];
    if (prev && cur && prev.index + prev.length > cur.index) {
      throw new Error(
        `edits[${prev.i}] and edits[${cur.i}] overlap in ${path}. Merge them into one edit or target disjoint regions.`,
      );
    }
  }
  let out = "";
  let pos = 0;
  let shift = 0;
  const diff: string[] = [];
  let firstChangedLine = 0;
  for (const m of sorted) {
    out += content.slice(pos, m.index) + m.newText;
    pos = m.index + m.length;
    const oldLine = lineOf(content, m.index);
    const newLine = oldLine + shift;
    if (firstChangedLine === 0) firstChangedLine = newLine;
    // Whole lines around the match: from the start of its first line to the end of its last line.
    const lineStart = m.index === 0 ? 0 : content.lastIndexOf("\n", m.index - 1) + 1;
    const nl = content.indexOf("\n", m.index + m.length);
    const lineEnd = nl === -1 ? content.length : nl;
    const oldLines = content.slice(lineStart, lineEnd).split("\n");
    const newLines = (content.slice(lineStart, m.index) + m.newText + content.slice(m.index + m.length, lineEnd)).split(
      "\n",
    );
    for (const [j, l] of oldLines.entries()) diff.push(`-${oldLine + j} ${l}`);
    for (const [j, l] of newLines.entries()) diff.push(`+${newLine + j} ${l}`);
    shift += newLines.length - oldLines.length;
  }
  out += content.slice(pos);
  if (out === content) {
    throw new Error(
      many
        ? `No changes made to ${path}. The replacements produced identical content.`
        : `No changes made to ${path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.`,
    );
  }
  return { content: out, diff: diff.join("\n"), firstChangedLine };
}

function countOccurrences(content: string, needle: string): number {
  let count = 0;
  for (let at = content.indexOf(needle); at !== -1; at = content.indexOf(needle, at + 1)) count++;
  return count;
}

function lineOf(content: string, index: number): number {
  let line = 1;
  for (let at = content.indexOf("\n"); at !== -1 && at < index; at = content.indexOf("\n", at + 1)) line++;
  return line;
}
