// Approval rules (PROTOCOL "Approvals"): which tool calls run, wait for a person, or are refused.
// The schemas, and the pure evaluation the loop's approval gate runs before each call.
import { z } from "zod";

export const ApprovalAction = z.enum(["allow", "ask", "deny"]);
export type ApprovalAction = z.infer<typeof ApprovalAction>;

/**
 * Where a rule is set, in precedence order: a session's rules (on its log, `set_approval_rules`),
 * then those of the agent version the session runs (`agent_version`: on its log, `agent_change`),
 * then the tenant's (KV `fleet_config` key `approval_rules`), then the loop worker's default
 * (`FLEET_APPROVAL_TOOLS`: `ask` for each tool named).
 */
export const ApprovalScope = z.enum(["session", "agent_version", "tenant", "worker"]);
export type ApprovalScope = z.infer<typeof ApprovalScope>;

export const MAX_APPROVAL_RULES = 100;
export const MAX_APPROVAL_PATTERN_CHARS = 512;
/** Longest expiry a rule may give an approval request: 7 days. */
export const MAX_APPROVAL_EXPIRY_MS = 7 * 24 * 60 * 60 * 1000;
/** Characters of an argument value a pattern is tested against (the rest is not looked at). */
export const MAX_MATCHED_VALUE_CHARS = 64 * 1024;

const compiles = (value: { regex: string; flags?: string | undefined }) => {
  try {
    new RegExp(value.regex, value.flags ?? "");
    return true;
  } catch {
    return false;
  }
};

/**
 * An argument pattern: the value at `pointer` (RFC 6901 JSON pointer into the call's arguments;
 * `""` is the whole arguments) matches `regex` (JavaScript syntax, not anchored unless written so).
 * A string is tested as it is, any other value as its JSON; a pointer that finds nothing does not
 * match.
 */
export const ArgumentPattern = z
  .object({
    pointer: z
      .string()
      .max(256)
      .regex(/^(\/.*)?$/, 'a JSON pointer: "" or starting with "/"'),
    regex: z.string().min(1).max(MAX_APPROVAL_PATTERN_CHARS),
    flags: z
      .string()
      .regex(/^[imsu]{0,4}$/, "flags among i, m, s, u")
      .optional(),
  })
  .strict()
  .refine(compiles, { message: "regex does not compile" });
export type ArgumentPattern = z.infer<typeof ArgumentPattern>;

/**
 * One rule. `tool` is a tool name or a glob (`*` any run of characters, `?` one). `expiresInMs`
 * (only with `ask`) makes a request expire that long after it is logged; `reason` is shown with a
 * `deny` (in the model's error result) or an `ask` (in the request).
 */
export const ApprovalRule = z
  .object({
    tool: z.string().regex(/^[A-Za-z0-9_*?-]{1,64}$/, "a tool name or a glob of one (* and ?)"),
    args: ArgumentPattern.optional(),
    action: ApprovalAction,
    expiresInMs: z.number().int().positive().max(MAX_APPROVAL_EXPIRY_MS).optional(),
    reason: z.string().max(1000).optional(),
  })
  .strict()
  .refine((r) => r.expiresInMs === undefined || r.action === "ask", {
    message: "expiresInMs is for `ask` rules only",
  });
export type ApprovalRule = z.infer<typeof ApprovalRule>;

export const ApprovalRules = z.array(ApprovalRule).max(MAX_APPROVAL_RULES);
export type ApprovalRules = z.infer<typeof ApprovalRules>;

/** The tenant's rules as stored in KV `fleet_config` (key `approval_rules`). */
export const TenantApprovalRules = z.object({ rules: ApprovalRules });
export type TenantApprovalRules = z.infer<typeof TenantApprovalRules>;

/** The rules of one scope, as the gate reads them. */
export interface ApprovalLayer {
  scope: ApprovalScope;
  rules: readonly ApprovalRule[];
}

/** What the policy says of one call: the action, and the rule that said it (none: nothing matched, `allow`). */
export type PolicyVerdict =
  | { action: "allow"; rule?: undefined }
  | { action: ApprovalAction; rule: { scope: ApprovalScope; index: number; value: ApprovalRule } };

const ALLOW: PolicyVerdict = { action: "allow" };

/**
 * The first rule that matches the call, over the layers in order (each layer's rules in order):
 * first match wins. No match: `allow`. Pure; compiled patterns are cached per rule object.
 */
export function evaluateApprovalPolicy(
  layers: readonly ApprovalLayer[],
  toolName: string,
  args: unknown,
): PolicyVerdict {
  for (const layer of layers) {
    const { rules } = layer;
    for (let index = 0; index < rules.length; index++) {
      const rule = rules[index] as ApprovalRule;
      if (!matchesRule(rule, toolName, args)) continue;
      return { action: rule.action, rule: { scope: layer.scope, index, value: rule } };
    }
  }
  return ALLOW;
}

/** The worker default as a layer: `ask` for each tool of `FLEET_APPROVAL_TOOLS`. */
export function workerApprovalLayer(tools: Iterable<string>): ApprovalLayer {
  return { scope: "worker", rules: [...tools].map((tool) => ({ tool, action: "ask" as const })) };
}

interface Compiled {
  tool: RegExp | string;
  args: RegExp | undefined;
}
const compiled = new WeakMap<ApprovalRule, Compiled>();

function compile(rule: ApprovalRule): Compiled {
  let c = compiled.get(rule);
  if (!c) {
    c = {
      tool: /[*?]/.test(rule.tool) ? globToRegExp(rule.tool) : rule.tool,
      args: rule.args ? new RegExp(rule.args.regex, rule.args.flags ?? "") : undefined,
    };
    compiled.set(rule, c);
  }
  return c;
}

export function matchesRule(rule: ApprovalRule, toolName: string, args: unknown): boolean {
  const c = compile(rule);
  if (typeof c.tool === "string" ? c.tool !== toolName : !c.tool.test(toolName)) return false;
  if (!rule.args || !c.args) return true;
  const found = resolvePointer(args, rule.args.pointer);
  if (!found.ok) return false;
  const text = typeof found.value === "string" ? found.value : JSON.stringify(found.value);
  if (text === undefined) return false;
  return c.args.test(text.length > MAX_MATCHED_VALUE_CHARS ? text.slice(0, MAX_MATCHED_VALUE_CHARS) : text);
}

function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${body}$`);
}

/** RFC 6901: `""` is the document; `~1` is `/`, `~0` is `~`; array indexes are decimal. */
export function resolvePointer(doc: unknown, pointer: string): { ok: true; value: unknown } | { ok: false } {
  if (pointer === "") return { ok: true, value: doc };
  let current = doc;
  for (const raw of pointer.slice(1).split("/")) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return { ok: false };
      const i = Number(token);
      if (i >= current.length) return { ok: false };
      current = current[i];
    } else if (current !== null && typeof current === "object") {
      if (!Object.hasOwn(current, token)) return { ok: false };
      current = (current as Record<string, unknown>)[token];
    } else {
      return { ok: false };
    }
  }
  return { ok: true, value: current };
}

/** How a decision reads: `approved`, `approved with edited arguments`, `denied: why`, `expired`. */
export function describeApprovalDecision(event: {
  approved: boolean;
  outcome?: "approved" | "denied" | "expired" | undefined;
  reason?: string | undefined;
  editedArgs?: unknown;
}): string {
  if (event.approved) return event.editedArgs !== undefined ? "approved with edited arguments" : "approved";
  if (event.outcome === "expired") return "expired";
  return `denied${event.reason ? `: ${event.reason}` : ""}`;
}
