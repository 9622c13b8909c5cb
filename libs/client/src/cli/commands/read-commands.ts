// Reading commands: watch, changes, replay, tree, sessions, export.
import { writeFileSync } from "node:fs";
import {
  describeApprovalDecision,
  emptySpend,
  type FleetEvent,
  formatLimits,
  formatSpend,
  type Spend,
} from "@fleet/protocol";
import type { ReplayResult } from "../../index.js";
import type { Style } from "../ansi.js";
import { CliError } from "../cli-error.js";
import { withClient } from "../connect.js";
import { drawTree } from "../draw-tree.js";
import { contentText, formatToolCall, oneLine, summarizeMessage } from "../format-entry.js";
import { type CliIo, onInterrupt, outStyle } from "../io.js";
import { loadTree } from "../load-tree.js";

/**
 * Follows the tenant's change feed (`FleetClient.changes()`), one line per frame (or NDJSON
 * `{sessions, approvals, all}`), until Ctrl-C.
 */
export async function changesCommand(io: CliIo, opts: { json?: boolean }): Promise<number> {
  return withClient(io, async (client) => {
    const stop = new AbortController();
    const off = onInterrupt(() => stop.abort());
    const style = outStyle(io);
    try {
      for await (const batch of client.changes({ signal: stop.signal })) {
        if (opts.json) {
          io.stdout.write(`${JSON.stringify(batch)}\n`);
          continue;
        }
        const what = batch.all ? style.bold("everything may have changed: reload") : batch.sessions.join(" ");
        io.stdout.write(`${what}${batch.approvals && !batch.all ? style.dim("  (approvals)") : ""}\n`);
      }
    } finally {
      off();
    }
    return 0;
  });
}

/** Follows a session's events, one line each (or NDJSON `{seq, event}`), until Ctrl-C. */
export async function watchCommand(
  io: CliIo,
  sessionId: string,
  opts: { from: number | "start" | "new"; json?: boolean },
): Promise<number> {
  return withClient(io, async (client) => {
    const stop = new AbortController();
    const off = onInterrupt(() => stop.abort());
    const style = outStyle(io);
    try {
      for await (const item of client.events(sessionId, { from: opts.from, signal: stop.signal })) {
        io.stdout.write(
          opts.json
            ? `${JSON.stringify({ seq: item.seq, event: item.event })}\n`
            : `${style.dim(String(item.seq).padStart(6))} ${describeEvent(item.event, style)}\n`,
        );
      }
    } finally {
      off();
    }
    return 0;
  });
}

/** One line describing an event (for `watch`). */
export function describeEvent(event: FleetEvent, style: Style): string {
  const type = style.bold(event.type.padEnd(21));
  switch (event.type) {
    case "message_start":
    case "message_end":
      return `${type} ${summarizeMessage(event.message)}`;
    case "message_update": {
      const text = event.deltas
        .map((d) =>
          d.type === "text_delta" || d.type === "thinking_delta" || d.type === "toolcall_delta" ? d.delta : "",
        )
        .join("");
      return `${type} ${style.dim(`${event.deltas.length} deltas`)} ${JSON.stringify(oneLine(text, 70))}`;
    }
    case "tool_execution_start":
    case "tool_execution_update":
      return `${type} ${formatToolCall(event.toolName, event.args)}`;
    case "tool_execution_end":
      return `${type} ${event.toolName} ${event.isError ? "✗" : "✓"} ${JSON.stringify(oneLine(contentText(event.result.content), 60))}`;
    case "command_accepted":
      return `${type} ${event.commandType} ${style.dim(event.commandId)}`;
    case "command_rejected":
      return `${type} ${event.commandType} (${event.code}): ${event.reason}`;
    case "session_created":
      return `${type} ${event.config.model.provider}/${event.config.model.modelId}${event.forkedFrom ? ` forked from ${event.forkedFrom.sessionId}` : ""}`;
    case "turn_end":
      return `${type} ${event.message.stopReason}, ${event.toolResults.length} tool results`;
    case "agent_end":
      return `${type} ${event.messages.length} messages`;
    case "queue_update":
      return `${type} steer ${event.steer.length}, follow-up ${event.followUp.length}, next-turn ${event.nextTurn.length}`;
    case "model_change":
      return `${type} ${event.provider}/${event.modelId}`;
    case "thinking_level_change":
      return `${type} ${event.thinkingLevel}`;
    case "leaf":
      return `${type} ${event.targetId ?? "(root)"}`;
    case "owner_change":
      return `${type} ${event.workerId} p${event.partition} epoch ${event.epoch}`;
    case "run_resumed":
      return `${type} ${event.reason}`;
    case "tool_approval_requested":
      return `${type} ${formatToolCall(event.toolName, event.args)} ${style.dim(event.toolCallId)}`;
    case "tool_approval_resolved":
      return `${type} ${event.toolCallId} ${describeApprovalDecision(event)}`;
    case "label":
      return `${type} ${event.targetId} ${event.label === null ? "(removed)" : JSON.stringify(event.label)}`;
    case "session_info":
      return `${type} ${JSON.stringify(event.name)}`;
    case "compaction":
      return `${type} ${event.tokensBefore} tokens before, first kept ${event.firstKeptEntryId}`;
    default:
      return type.trimEnd();
  }
}

/** Prints the session as it stood at `--to` (agent state, transcript, tree), or `--json`. */
export async function replayCommand(
  io: CliIo,
  sessionId: string,
  opts: { to?: number; json?: boolean },
): Promise<number> {
  return withClient(io, async (client) => {
    const replayed = await client.replay(sessionId, opts.to !== undefined ? { toSeq: opts.to } : {});
    if (replayed.events === 0)
      throw new CliError(`session ${sessionId} has no events${opts.to !== undefined ? ` up to seq ${opts.to}` : ""}`);
    io.stdout.write(
      opts.json
        ? `${JSON.stringify(replayToJson(sessionId, replayed))}\n`
        : formatReplay(sessionId, replayed, outStyle(io)),
    );
    return 0;
  });
}

/** JSON form of a replay: the agent state (the pending-call Set as an array) and the tree. */
export function replayToJson(sessionId: string, replayed: ReplayResult): Record<string, unknown> {
  return {
    sessionId,
    seq: replayed.seq,
    events: replayed.events,
    invalid: replayed.invalid,
    agent: { ...replayed.agent, pendingToolCalls: [...replayed.agent.pendingToolCalls] },
    spend: { ...replayed.spend, days: Object.fromEntries(replayed.spend.days) },
    tree: {
      entries: replayed.tree.entries,
      leafId: replayed.tree.leafId,
      labels: replayed.tree.labels,
      name: replayed.tree.name,
    },
  };
}

export function formatReplay(sessionId: string, r: ReplayResult, style: Style): string {
  const a = r.agent;
  const lines = [
    `${style.bold(`session ${sessionId}`)} at seq ${r.seq} (${r.events} events${r.invalid.length ? `, ${r.invalid.length} invalid skipped` : ""})`,
    `model: ${a.model ? `${a.model.provider}/${a.model.modelId}` : "(none)"}   thinking: ${a.thinkingLevel}   tools: ${a.activeTools ? a.activeTools.join(", ") : "all"}`,
    `status: ${a.isStreaming ? style.yellow(`running (run ${a.runId ?? "?"})`) : "idle"}${a.pendingToolCalls.size ? `   pending tool calls: ${[...a.pendingToolCalls].join(", ")}` : ""}`,
    `queues: steer ${a.queues.steer.length}, follow-up ${a.queues.followUp.length}, next-turn ${a.queues.nextTurn.length}`,
  ];
  const sp = r.spend;
  lines.push(
    `spend: session ${formatSpend(sp.session)}   last run ${formatSpend(sp.run)}`,
    `budget: run ${formatLimits(sp.budget.run)}   session ${formatLimits(sp.budget.session)}`,
  );
  if (a.errorMessage) lines.push(style.red(`error: ${a.errorMessage}`));
  lines.push("", style.bold(`messages (${a.messages.length})`));
  for (const m of a.messages) lines.push(`  ${summarizeMessage(m, 100)}`);
  if (a.streamingMessage) lines.push(style.yellow(`  streaming → ${summarizeMessage(a.streamingMessage, 100)}`));
  lines.push("", style.bold(`tree (${r.tree.entries.length} entries)`));
  for (const line of drawTree({ entries: r.tree.entries, leafId: r.tree.leafId, labels: r.tree.labels }, style)) {
    lines.push(`  ${line}`);
  }
  return `${lines.join("\n")}\n`;
}

/** Draws the session tree with the leaf marked (store first, the log when no store runs). */
export async function treeCommand(io: CliIo, sessionId: string, opts: { json?: boolean }): Promise<number> {
  return withClient(io, async (client) => {
    const tree = await loadTree(client, sessionId);
    if (opts.json) {
      io.stdout.write(`${JSON.stringify(tree)}\n`);
      return 0;
    }
    const style = outStyle(io);
    if (tree.entries.length === 0) throw new CliError(`session ${sessionId} has no entries`);
    const note = tree.source === "log" ? style.dim(" (no session store answered: folded from the log)") : "";
    io.stdout.write(`${style.bold(`session ${sessionId}`)} at seq ${tree.seq}${note}\n`);
    for (const line of drawTree(tree, style)) io.stdout.write(`${line}\n`);
    return 0;
  });
}

export interface SessionsOptions {
  limit?: number;
  json?: boolean;
  /** Only the sessions with an open run (the store's `list_running`). */
  running?: boolean;
  /** Only the sessions whose id or name (each from any word) or a label starts with this (`search_sessions`). */
  search?: string;
  cursor?: string;
}

export async function sessionsCommand(io: CliIo, opts: SessionsOptions): Promise<number> {
  return withClient(io, async (client) => {
    if (opts.running && opts.search !== undefined) throw new CliError("--running and --search cannot be combined");
    const paging = {
      ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
      ...(opts.cursor !== undefined ? { cursor: opts.cursor } : {}),
    };
    const reply =
      opts.search !== undefined
        ? await client.searchSessions(opts.search, paging)
        : opts.running
          ? await client.listRunning(paging)
          : await client.listSessions(paging);
    // A deployment from before KV fleet_budgets lists its sessions without spend.
    const budget = await client.tenantBudget().catch(() => ({
      day: "",
      limits: undefined,
      total: emptySpend(),
      sessions: new Map<string, Spend>(),
      deleted: emptySpend(),
    }));
    if (opts.json) {
      const today = { ...budget, sessions: Object.fromEntries(budget.sessions) };
      io.stdout.write(`${JSON.stringify({ ...reply, spendToday: today })}\n`);
      return 0;
    }
    const style = outStyle(io);
    const tenantLine = `tenant spend ${budget.day} (UTC): ${formatSpend(budget.total)}   daily budget: ${formatLimits(budget.limits)}`;
    const tenantSpent = budget.limits !== undefined || budget.sessions.size > 0;
    if (reply.sessions.length === 0) {
      io.stdout.write(`no sessions\n${tenantSpent ? `${style.dim(tenantLine)}\n` : ""}`);
      return 0;
    }
    const width = Math.max(10, ...reply.sessions.map((s) => s.sessionId.length));
    const spentOf = (sid: string) => {
      const s = budget.sessions.get(sid);
      return s ? `${s.outputTokens}/$${s.costUsd.toFixed(4)}` : "-";
    };
    const spendWidth = Math.max(14, ...reply.sessions.map((s) => spentOf(s.sessionId).length));
    io.stdout.write(
      `${style.dim(`${"SESSION".padEnd(width)}  STATUS   SEQ      UPDATED              ${"TODAY OUT/COST".padEnd(spendWidth)}  NAME`)}\n`,
    );
    for (const s of reply.sessions) {
      const updated = new Date(s.updatedAt).toISOString().replace("T", " ").slice(0, 19);
      io.stdout.write(
        `${s.sessionId.padEnd(width)}  ${s.status.padEnd(7)}  ${String(s.seq).padEnd(7)}  ${updated}  ${spentOf(s.sessionId).padEnd(spendWidth)}  ${s.name ?? ""}\n`,
      );
    }
    if (tenantSpent) io.stdout.write(`${style.dim(tenantLine)}\n`);
    if (reply.cursor) io.stdout.write(`${style.dim(`more: --cursor ${reply.cursor}`)}\n`);
    return 0;
  });
}

/** Pending tool approvals, oldest first (the store's `list_approvals`): every session's or one's. */
export async function approvalsCommand(
  io: CliIo,
  opts: { session?: string; json?: boolean; descendants?: boolean },
): Promise<number> {
  if (opts.descendants && opts.session === undefined) throw new CliError("--descendants needs --session");
  return withClient(io, async (client) => {
    const approvals =
      opts.session !== undefined && opts.descendants
        ? await client.approvalsWithDescendants(opts.session)
        : (await client.listApprovals(opts.session !== undefined ? { sessionId: opts.session } : {})).approvals;
    if (opts.json) {
      io.stdout.write(`${JSON.stringify({ approvals })}\n`);
      return 0;
    }
    if (approvals.length === 0) {
      io.stdout.write("no pending approvals\n");
      return 0;
    }
    const style = outStyle(io);
    const width = Math.max(10, ...approvals.map((a) => a.sessionId.length));
    io.stdout.write(`${style.dim(`${"SESSION".padEnd(width)}  REQUESTED            TOOL  CALL  ARGS`)}\n`);
    for (const a of approvals) {
      const at = new Date(a.requestedAt).toISOString().replace("T", " ").slice(0, 19);
      const args = JSON.stringify(a.args) ?? "";
      io.stdout.write(
        `${a.sessionId.padEnd(width)}  ${at}  ${a.toolName}  ${a.toolCallId}  ${args.length > 80 ? `${args.slice(0, 80)}…` : args}\n`,
      );
    }
    return 0;
  });
}

/** Writes the session as pi v3 JSONL to stdout or to `--output`. */
export async function exportCommand(io: CliIo, sessionId: string, opts: { output?: string }): Promise<number> {
  return withClient(io, async (client) => {
    const jsonl = await client.export(sessionId);
    if (!opts.output) {
      io.stdout.write(jsonl);
      return 0;
    }
    try {
      writeFileSync(opts.output, jsonl);
    } catch (err) {
      throw new CliError(
        `cannot write ${opts.output}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    io.stderr.write(`exported ${sessionId} to ${opts.output}\n`);
    return 0;
  });
}
