// `fleet budget`: the tenant's daily limits and what its sessions spent on a UTC day;
// `fleet budget set` and `fleet budget clear` change the limits (an operator login may).
import { type BudgetLimits, formatLimits, formatSpend } from "@fleet/protocol";
import { sessionsBySpend } from "../../tenant-budget.js";
import { CliError, EXIT } from "../cli-error.js";
import { withClient } from "../connect.js";
import { type CliIo, outStyle } from "../io.js";

export async function budgetCommand(io: CliIo, opts: { day?: string; json?: boolean }): Promise<number> {
  return withClient(io, async (client) => {
    const report = await client.tenantBudget(opts.day);
    const sessions = sessionsBySpend(report);
    if (opts.json) {
      const out = {
        day: report.day,
        limits: report.limits ?? null,
        total: report.total,
        sessions,
        deleted: report.deleted,
      };
      io.stdout.write(`${JSON.stringify(out)}\n`);
      return 0;
    }
    const style = outStyle(io);
    io.stdout.write(`${style.bold(`tenant budget ${report.day} (UTC)`)}\n`);
    io.stdout.write(`  limits  ${formatLimits(report.limits)}\n`);
    io.stdout.write(`  spent   ${formatSpend(report.total)} (${sessions.length} sessions)\n`);
    if (report.deleted.totalTokens > 0 || report.deleted.costUsd > 0) {
      io.stdout.write(`  deleted ${formatSpend(report.deleted)} (sessions deleted or archived since)\n`);
    }
    const width = Math.max(10, ...sessions.map((s) => s.sessionId.length));
    for (const s of sessions) io.stdout.write(`  ${s.sessionId.padEnd(width)}  ${formatSpend(s)}\n`);
    return 0;
  });
}

export interface BudgetSetOptions {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  cost?: number;
}

/** Replaces the limits with the given ones (a limit not given is no limit). */
export async function budgetSetCommand(io: CliIo, opts: BudgetSetOptions): Promise<number> {
  const limits: BudgetLimits = {
    ...(opts.inputTokens !== undefined ? { inputTokens: opts.inputTokens } : {}),
    ...(opts.outputTokens !== undefined ? { outputTokens: opts.outputTokens } : {}),
    ...(opts.totalTokens !== undefined ? { totalTokens: opts.totalTokens } : {}),
    ...(opts.cost !== undefined ? { costUsd: opts.cost } : {}),
  };
  if (Object.keys(limits).length === 0) {
    throw new CliError(
      "give at least one limit: --input-tokens, --output-tokens, --total-tokens or --cost (`fleet budget clear` removes them)",
      EXIT.usage,
    );
  }
  return withClient(io, async (client) => {
    await client.setTenantLimits(limits);
    io.stdout.write(`tenant daily limits: ${formatLimits(limits)}\n`);
    return 0;
  });
}

export async function budgetClearCommand(io: CliIo): Promise<number> {
  return withClient(io, async (client) => {
    await client.setTenantLimits(null);
    io.stdout.write("tenant daily limits: none\n");
    return 0;
  });
}
