// Best-effort parsing of a tool call's streamed JSON arguments (pi-ai's progressive parsing).

/**
 * Parses the arguments JSON of a tool call that may still be streaming.
 *
 * Contract: never throws; always returns a plain object.
 * - Complete JSON parses as `JSON.parse` would.
 * - Truncated JSON yields what is complete so far: open objects and arrays are closed, an
 *   unterminated string keeps its text, a key without a value and an unfinished number or
 *   literal (`tr`, `-`, `1.`) are dropped.
 * - Malformed string escapes and raw control characters are repaired (kept literally), as pi does.
 * - Anything else that is not JSON, and any value that is not an object, gives `{}`.
 */
export function parseStreamingJson(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = parsePartial(text);
  }
  return isPlainObject(value) ? value : {};
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Marks a value cut off by the end of input that must be dropped (unfinished number or literal). */
const DROP = Symbol("drop");
class Malformed extends Error {}

function parsePartial(text: string): unknown {
  let i = 0;
  const skipWs = () => {
    while (i < text.length && " \t\n\r".includes(text[i] as string)) i++;
  };
  const atEnd = () => i >= text.length;

  const parseValue = (): unknown => {
    skipWs();
    if (atEnd()) return DROP;
    const c = text[i];
    if (c === "{") return parseObject();
    if (c === "[") return parseArray();
    if (c === '"') return parseString();
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return parseNumber();
    return parseLiteral();
  };

  const parseObject = (): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    i++; // {
    for (;;) {
      skipWs();
      if (atEnd()) return out;
      if (text[i] === "}") {
        i++;
        return out;
      }
      if (text[i] !== '"') throw new Malformed();
      const key = parseString();
      if (!lastStringClosed) return out;
      skipWs();
      if (atEnd()) return out;
      if (text[i] !== ":") throw new Malformed();
      i++;
      const value = parseValue();
      if (value === DROP) return out;
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
      skipWs();
      if (atEnd()) return out;
      if (text[i] === ",") i++;
      else if (text[i] !== "}") throw new Malformed();
    }
  };

  const parseArray = (): unknown[] => {
    const out: unknown[] = [];
    i++; // [
    for (;;) {
      skipWs();
      if (atEnd()) return out;
      if (text[i] === "]") {
        i++;
        return out;
      }
      const value = parseValue();
      if (value === DROP) return out;
      out.push(value);
      skipWs();
      if (atEnd()) return out;
      if (text[i] === ",") i++;
      else if (text[i] !== "]") throw new Malformed();
    }
  };

  let lastStringClosed = false;
  const parseString = (): string => {
    let out = "";
    lastStringClosed = false;
    i++; // opening quote
    while (i < text.length) {
      const c = text[i] as string;
      if (c === '"') {
        i++;
        lastStringClosed = true;
        return out;
      }
      if (c !== "\\") {
        out += c;
        i++;
        continue;
      }
      const next = text[i + 1];
      if (next === undefined) {
        i = text.length; // a lone trailing backslash is an unfinished escape: drop it
        return out;
      }
      if (next === "u") {
        const hex = text.slice(i + 2, i + 6);
        if (/^[0-9a-fA-F]{4}$/.test(hex)) {
          out += String.fromCharCode(Number.parseInt(hex, 16));
          i += 6;
          continue;
        }
        if (i + 6 > text.length && /^[0-9a-fA-F]*$/.test(hex)) {
          i = text.length; // unfinished \u escape at the end: drop it
          return out;
        }
        out += "\\u";
        i += 2;
        continue;
      }
      const simple = Object.hasOwn(SIMPLE_ESCAPES, next) ? SIMPLE_ESCAPES[next] : undefined;
      if (simple !== undefined) out += simple;
      else out += `\\${next}`; // invalid escape: keep it literally
      i += 2;
    }
    return out;
  };

  const parseNumber = (): number | typeof DROP => {
    let end = i;
    while (end < text.length && NUMBER_CHARS.includes(text[end] as string)) end++;
    const token = text.slice(i, end);
    i = end;
    if (COMPLETE_NUMBER.test(token)) return Number(token);
    if (end >= text.length) return DROP; // unfinished number cut off by the end of input
    throw new Malformed();
  };

  const parseLiteral = (): unknown => {
    for (const [word, value] of LITERALS) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return value;
      }
      const rest = text.slice(i);
      if (word.startsWith(rest)) {
        i = text.length;
        return DROP;
      }
    }
    throw new Malformed();
  };

  try {
    const value = parseValue();
    skipWs();
    if (!atEnd()) return undefined;
    return value === DROP ? undefined : value;
  } catch (err) {
    if (err instanceof Malformed) return undefined;
    throw err;
  }
}

const SIMPLE_ESCAPES: Record<string, string> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

const NUMBER_CHARS = "0123456789+-.eE";
const COMPLETE_NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

const LITERALS: ReadonlyArray<readonly [string, unknown]> = [
  ["true", true],
  ["false", false],
  ["null", null],
];
