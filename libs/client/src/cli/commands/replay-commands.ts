// `fleet replay <session> --model …` (one replay with overrides), `fleet replay --sessions <query>`
// (a batch, as a table) and `fleet diff <a> <b>` (two sessions turn by turn). Change 51.
import { type ReplayOverrides, type SessionDiff, ThinkingLevel, ToolsMode } from "@fleet/protocol";
import type { ReplayRow } from "../../session-replay.js";
import { CliError } from "../cli-error.js";
import { withClient } from "../connect.js";
import { type CliIo, outStyle } from "../io.js";

export interface ReplayWithOptions {
  from?: string;
  model?: string;
  thinking?: string;
  system?: string;
  tools?: string;
  toolsMode?: string;
  sessions?: string;
  limit?: number;
  wait?: boolean;
  timeout?: number;
  json?: boolean;
}

/** Whether `replay`'s options ask for a replay with overrides rather than a state at a sequence. */
export const isReplayWith = (o: ReplayWithOptions): boolean =>
  [o.from, o.model, o.thinking, o.system, o.tools, o.toolsMode, o.sessions].some((v) => v !== undefined);

/** `--model [provider/]id`, `--thinking`, `--system`, `--tools a,b` as overrides. */
export function overridesOf(o: ReplayWithOptions): ReplayOverrides {
  const out: ReplayOverrides = {};
  if (o.model !== undefined) {
    const [provider, modelId] = o.model.includes("/")
      ? (o.model.split("/", 2) as [string, string])
      : ["anthropic", o.model];
    if (!provider || !modelId) throw new CliError("--model is [provider/]<modelId>");
    out.model = { provider, modelId };
  }
  if (o.thinking !== undefined) {
    const level = ThinkingLevel.safeParse(o.thinking);
    if (!level.success) throw new CliError(`--thinking must be one of ${ThinkingLevel.options.join(", ")}`);
    out.thinkingLevel = level.data;
  }
  if (o.system !== undefined) out.systemPrompt = o.system;
  if (o.tools !== undefined)
    out.activeTools = o.tools
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean);
  return out;
}

function toolsModeOf(o: ReplayWithOptions): ToolsMode | undefined {
  if (o.toolsMode === undefined) return undefined;
  const mode = ToolsMode.safeParse(o.toolsMode);
  if (!mode.success) throw new CliError(`--tools-mode must be one of ${ToolsMode.options.join(", ")}`);
  return mode.data;
}

/**
 * One replay of `source` (`--from`: the entry kept last) with the overrides: prints the new
 * session's id, waits for its turns (unless `--no-wait`) and prints how it differs from the source.
 * With `--sessions <query>`: replays every session the store's search finds and prints a table.
 */
export async function replayWithCommand(io: CliIo, source: string | undefined, o: ReplayWithOptions): Promise<number> {
  const overrides = overridesOf(o);
  const toolsMode = toolsModeOf(o);
  const request = { ...(Object.keys(overrides).length > 0 ? { overrides } : {}), ...(toolsMode ? { toolsMode } : {}) };
  const timeoutMs = (o.timeout ?? 300) * 1000;
  if (o.sessions !== undefined) {
    if (source !== undefined) throw new CliError("give either a session or --sessions <query>, not both");
    if (o.from !== undefined) throw new CliError("--from needs one session; --sessions replays whole sessions");
    return withClient(io, async (client) => {
      const found = await client.searchSessions(o.sessions as string, { limit: o.limit ?? 100 });
      const sources = found.sessions.map((s) => s.sessionId);
      if (sources.length === 0) throw new CliError(`no session matches ${JSON.stringify(o.sessions)}`);
      const rows = await client.replaySessions(sources, { ...request, timeoutMs });
      io.stdout.write(o.json ? `${JSON.stringify({ rows, summary: summaryOf(rows) })}\n` : formatReplayTable(rows));
      return rows.some((r) => r.errors.length > 0) ? 1 : 0;
    });
  }
  if (source === undefined) throw new CliError("replay needs a session, or --sessions <query>");
  return withClient(io, async (client) => {
    const { sessionId } = await client.replayWith(source, {
      ...request,
      ...(o.from !== undefined ? { fromEntry: o.from } : {}),
    });
    if (o.wait === false) {
      io.stdout.write(o.json ? `${JSON.stringify({ sessionId })}\n` : `replay ${sessionId} of ${source} started\n`);
      return 0;
    }
    const progress = await client.waitForReplay(sessionId, { timeoutMs });
    const diff = await client.diff(source, sessionId);
    if (o.json) {
      io.stdout.write(`${JSON.stringify({ sessionId, progress, diff })}\n`);
      return 0;
    }
    const stopped = progress.stopped ? ` (stopped at turn ${progress.stopped.index}: ${progress.stopped.reason})` : "";
    io.stdout.write(`replay ${sessionId} of ${source}: ${progress.turnsRun} turn(s) run${stopped}\n`);
    io.stdout.write(formatDiff(source, sessionId, diff, io));
    return progress.stopped ? 1 : 0;
  });
}

/** `fleet diff <a> <b>`: exit 0 when nothing differs, 1 otherwise. */
export async function diffCommand(io: CliIo, a: string, b: string, o: { json?: boolean }): Promise<number> {
  return withClient(io, async (client) => {
    const diff = await client.diff(a, b);
    if (diff.a.length === 0 && diff.b.length === 0) throw new CliError(`neither ${a} nor ${b} has a turn`);
    io.stdout.write(o.json ? `${JSON.stringify(diff)}\n` : formatDiff(a, b, diff, io));
    return diff.differences.length === 0 ? 0 : 1;
  });
}

const usd = (n: number) => `$${n.toFixed(4)}`;
const clip = (s: string, n: number) => {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
};

/** Each turn side by side (tokens, cost, latency), then every difference, or "nothing differs". */
export function formatDiff(a: string, b: string, diff: SessionDiff, io: CliIo): string {
  const style = outStyle(io);
  const lines = [style.bold(`a = ${a}   b = ${b}`)];
  for (let i = 0; i < Math.max(diff.a.length, diff.b.length); i++) {
    const x = diff.a[i];
    const y = diff.b[i];
    const side = (t: typeof x) =>
      t
        ? `${t.toolCalls.length} call(s) · in ${t.inputTokens} · out ${t.outputTokens} · ${usd(t.costUsd)} · ${(t.latencyMs / 1000).toFixed(2)}s`
        : "(no turn)";
    lines.push(`turn ${i + 1}  ${clip((x ?? y)?.user ?? "", 50)}`);
    lines.push(`  a: ${side(x)}`);
    lines.push(`  b: ${side(y)}`);
  }
  if (diff.differences.length === 0) {
    lines.push(
      style.bold(
        `nothing differs: ${diff.a.length} turn(s) with the same messages, tool calls, tokens and cost (latency not compared)`,
      ),
    );
    return `${lines.join("\n")}\n`;
  }
  lines.push(style.bold(`${diff.differences.length} difference(s), ${diff.divergedToolCalls} tool call(s) diverged:`));
  for (const d of diff.differences) {
    lines.push(`turn ${d.turn + 1} ${d.field}`);
    lines.push(`  a: ${clip(d.a, 200)}`);
    lines.push(`  b: ${clip(d.b, 200)}`);
  }
  return `${lines.join("\n")}\n`;
}

/** Totals of a batch. */
export function summaryOf(rows: readonly ReplayRow[]) {
  return {
    sessions: rows.length,
    turns: rows.reduce((n, r) => n + r.turns, 0),
    divergedToolCalls: rows.reduce((n, r) => n + r.divergedToolCalls, 0),
    inputTokens: rows.reduce((n, r) => n + r.inputTokens, 0),
    outputTokens: rows.reduce((n, r) => n + r.outputTokens, 0),
    costUsd: rows.reduce((n, r) => n + r.costUsd, 0),
    withErrors: rows.filter((r) => r.errors.length > 0).length,
  };
}

/** The batch as a table, one row per session, then the summary line. */
export function formatReplayTable(rows: readonly ReplayRow[]): string {
  const head = ["source", "replay", "turns", "diverged", "tokens in/out", "cost", "errors"];
  const body = rows.map((r) => [
    r.source,
    r.replay || "-",
    String(r.turns),
    String(r.divergedToolCalls),
    `${r.inputTokens}/${r.outputTokens}`,
    usd(r.costUsd),
    r.errors.length === 0 ? "0" : `${r.errors.length}: ${clip(r.errors.join("; "), 100)}`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i >= 2 && i <= 5 ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  const s = summaryOf(rows);
  return `${[line(head), ...body.map(line)].join("\n")}\nreplayed ${s.sessions} session(s): ${s.turns} turn(s), ${s.divergedToolCalls} tool call(s) diverged, tokens in ${s.inputTokens} · out ${s.outputTokens}, ${usd(s.costUsd)}, ${s.withErrors} with errors\n`;
}
