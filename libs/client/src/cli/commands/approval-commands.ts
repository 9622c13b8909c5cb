// `fleet approve` / `fleet deny`: decide a tool call waiting for approval (with edited arguments);
// `fleet approvals rules [set]`: show or replace the approval rules of a session or the tenant.
import { readFileSync } from "node:fs";
import type { ApprovalRule } from "@fleet/protocol";
import { checkedApprovalRules } from "../../approval-rules.js";
import { CliError, EXIT } from "../cli-error.js";
import { withClient } from "../connect.js";
import { type CliIo, outStyle } from "../io.js";

/** JSON given inline, or `@file` for a file's JSON. */
export function readJsonArgument(value: string, what: string): unknown {
  let text = value;
  if (value.startsWith("@")) {
    try {
      text = readFileSync(value.slice(1), "utf8");
    } catch (err) {
      throw new CliError(
        `cannot read ${value.slice(1)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new CliError(`${what} is not JSON: ${(err as Error).message}`, EXIT.usage);
  }
}

export async function approveCommand(
  io: CliIo,
  sessionId: string,
  toolCallId: string,
  opts: { args?: string },
): Promise<number> {
  const args = opts.args !== undefined ? readJsonArgument(opts.args, "--args") : undefined;
  return withClient(io, async (client) => {
    const outcome = await client.approveToolCall(sessionId, toolCallId, args !== undefined ? { args } : {});
    const edited = args !== undefined ? " with edited arguments" : "";
    io.stdout.write(`${outStyle(io).green("✓")} ${toolCallId} approved${edited} (seq ${outcome.seq})\n`);
    return 0;
  });
}

export async function denyCommand(
  io: CliIo,
  sessionId: string,
  toolCallId: string,
  opts: { reason?: string },
): Promise<number> {
  return withClient(io, async (client) => {
    const outcome = await client.denyToolCall(sessionId, toolCallId, opts.reason);
    io.stdout.write(`${outStyle(io).green("✓")} ${toolCallId} denied (seq ${outcome.seq})\n`);
    return 0;
  });
}

/** One rule on one line: `1. bash /command ~ /^rm / → ask (expires in 60s): reason`. */
export function formatRule(rule: ApprovalRule, index: number): string {
  const pattern = rule.args ? ` ${rule.args.pointer || "(args)"} ~ /${rule.args.regex}/${rule.args.flags ?? ""}` : "";
  const expiry = rule.expiresInMs !== undefined ? ` (expires in ${rule.expiresInMs / 1000}s)` : "";
  return `${index}. ${rule.tool}${pattern} → ${rule.action}${expiry}${rule.reason ? `: ${rule.reason}` : ""}`;
}

export async function rulesCommand(io: CliIo, opts: { session?: string; json?: boolean }): Promise<number> {
  return withClient(io, async (client) => {
    const rules = opts.session ? await client.approvalRules(opts.session) : await client.tenantApprovalRules();
    if (opts.json) {
      io.stdout.write(`${JSON.stringify({ scope: opts.session ? "session" : "tenant", rules })}\n`);
      return 0;
    }
    const scope = opts.session ? `session ${opts.session}` : "tenant";
    io.stdout.write(`${outStyle(io).bold(`approval rules of the ${scope}`)} (first match wins)\n`);
    if (rules.length === 0) io.stdout.write("  none\n");
    for (const [i, rule] of rules.entries()) io.stdout.write(`  ${formatRule(rule, i)}\n`);
    return 0;
  });
}

/** Replaces the rules with a JSON array (inline or `@file`); `[]` removes them. */
export async function rulesSetCommand(io: CliIo, json: string, opts: { session?: string }): Promise<number> {
  const rules = checkedApprovalRules(readJsonArgument(json, "the rules"));
  return withClient(io, async (client) => {
    if (opts.session) await client.setApprovalRules(opts.session, rules);
    else await client.setTenantApprovalRules(rules);
    const scope = opts.session ? `session ${opts.session}` : "tenant";
    io.stdout.write(`${outStyle(io).green("✓")} ${rules.length} approval rule(s) set for the ${scope}\n`);
    return 0;
  });
}
