// Finds secrets in context messages and replaces them with a marker. Pure.

/** What is redacted: a name (shown in the marker) and its pattern. */
export const SECRET_PATTERNS: readonly { name: string; pattern: RegExp }[] = [
  { name: "anthropic_key", pattern: /\bsk-ant-[A-Za-z0-9_-]{16,}/g },
  { name: "openai_key", pattern: /\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}/g },
  { name: "aws_access_key", pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
  { name: "github_token", pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b/g },
  { name: "slack_token", pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g },
  { name: "private_key", pattern: /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g },
  { name: "bearer_token", pattern: /\bBearer [A-Za-z0-9._~+/-]{20,}=*/g },
];

/** Fields never rewritten: binary data and provider signatures (changing them breaks the request). */
const OPAQUE_FIELDS: ReadonlySet<string> = new Set(["data", "thinkingSignature", "textSignature", "thoughtSignature"]);

/** `text` with every secret replaced by `[REDACTED:<name>]`, and how many were replaced. */
export function redactText(text: string): { text: string; count: number } {
  let count = 0;
  let out = text;
  for (const { name, pattern } of SECRET_PATTERNS) {
    out = out.replace(pattern, () => {
      count++;
      return `[REDACTED:${name}]`;
    });
  }
  return { text: out, count };
}

/**
 * `value` (context messages, or any JSON) with secrets redacted in every string except opaque
 * fields; unchanged parts are the same objects. `count` 0 means `value` itself is returned.
 */
export function redactSecrets<T>(value: T): { value: T; count: number } {
  let count = 0;
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") {
      const r = redactText(v);
      count += r.count;
      return r.count > 0 ? r.text : v;
    }
    if (Array.isArray(v)) {
      let changed = false;
      const next = v.map((item) => {
        const w = walk(item);
        if (w !== item) changed = true;
        return w;
      });
      return changed ? next : v;
    }
    if (v !== null && typeof v === "object") {
      let changed = false;
      const next: Record<string, unknown> = {};
      for (const [k, item] of Object.entries(v)) {
        const w = OPAQUE_FIELDS.has(k) ? item : walk(item);
        if (w !== item) changed = true;
        next[k] = w;
      }
      return changed ? next : v;
    }
    return v;
  };
  const redacted = walk(value) as T;
  return { value: redacted, count };
}
