// How deep a client's JSON may nest and how many values it may hold, checked on the text before it
// is parsed. JSON.parse itself does not recurse, but what handles the value afterwards does
// (validation, JSON.stringify when the command is published): 10,000 nested arrays overflow the
// stack there. And validation works per value: a million array elements that each fail their
// schema keep the event loop busy for seconds.

/** The limits of any JSON a client sends (a body, each line of a JSONL import). */
export interface JsonLimits {
  /** Deepest nesting of arrays and objects. */
  maxDepth: number;
  /** Most values inside arrays and objects (elements and members), at any depth. */
  maxValues: number;
}

export const JSON_LIMITS: Readonly<JsonLimits> = { maxDepth: 64, maxValues: 100_000 };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const NEWLINE = 0x0a;
const COMMA = 0x2c;

/**
 * Pure, linear, without recursion: undefined when `text` keeps within `limits`, else the refusal,
 * naming the limit. Brackets and commas inside strings do not count; values are counted as the
 * commas between them plus one for each array or object. `lines`: `text` is JSONL, one value per
 * line: a line break outside a string (or inside one, where JSON allows none) ends a value, and
 * depth and count start again at 0.
 */
export function jsonLimitViolation(
  text: string,
  limits: JsonLimits,
  opts: { lines?: boolean } = {},
): string | undefined {
  const lines = opts.lines ?? false;
  const where = () => (lines ? ` (line ${line})` : "");
  let depth = 0;
  let values = 0;
  let line = 1;
  let nextNewline = lines ? indexOrEnd(text, "\n", 0) : text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i + 1);
      if (end < nextNewline) {
        i = end;
        continue;
      }
      // Unterminated on this line: what follows is the next line's.
      i = nextNewline - 1;
      continue;
    }
    if (c === 0x5b || c === 0x7b || c === COMMA) {
      if (c !== COMMA && ++depth > limits.maxDepth) {
        return `the JSON${where()} nests arrays and objects deeper than ${limits.maxDepth} levels, the gateway's limit`;
      }
      if (++values > limits.maxValues) {
        return `the JSON${where()} holds more than ${limits.maxValues} values in arrays and objects, the gateway's limit`;
      }
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    } else if (c === NEWLINE && lines) {
      depth = 0;
      values = 0;
      line++;
      nextNewline = indexOrEnd(text, "\n", i + 1);
    }
  }
  return undefined;
}

/** The index of the quote that closes the string whose content starts at `from`, or `text.length`. */
function stringEnd(text: string, from: number): number {
  let at = from;
  for (;;) {
    const quote = text.indexOf('"', at);
    if (quote === -1) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

const indexOrEnd = (text: string, search: string, from: number): number => {
  const at = text.indexOf(search, from);
  return at === -1 ? text.length : at;
};
