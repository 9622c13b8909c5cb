// The chaos report: what was done to the system, how it behaved, and every violation found.

import type { ScheduleSummary } from "./checks/check-schedule.js";
import type { SubAgentSummary } from "./checks/check-sub-agents.js";
import type { RunnerSettle } from "./checks/measure-runner-settle.js";
import { INVARIANTS, type Invariant, type SentPrompt, type Violation } from "./checks/types.js";
import type { AppliedFault, FailoverSample } from "./fault-runner.js";
import { FAULT_KINDS } from "./fault-schedule.js";

export interface ReportInput {
  seed: number;
  durationMs: number;
  sessions: number;
  cluster: boolean;
  applied: readonly AppliedFault[];
  prompts: readonly SentPrompt[];
  latencies: readonly number[];
  failovers: readonly FailoverSample[];
  runsResumed: number;
  /** Tool calls in flight at runner kills: time to their end. */
  runnerSettle: RunnerSettle;
  /** The SSE clients (one per session, through the gateways) and how often they reconnected. */
  sse: { clients: number; reconnects: number };
  /**
   * The run's webhook: matching events in the logs, POSTs the receiver got, POSTs of an event it had
   * got before, and the requests it answered 500 or late on purpose.
   */
  webhook?: { matching: number; requests: number; repeated: number; failed: number; slow: number; catchUpMs: number };
  /** Tool error results by their text (first 80 characters). */
  toolErrors: ReadonlyMap<string, number>;
  /**
   * The run's schedule: its slots and outcomes, slots still unsettled when the suite stopped waiting,
   * and the loop faults that struck the scheduler lease's holder.
   */
  schedule?: ScheduleSummary & { unsettled: number; holderFaults: readonly string[] };
  /** The workload's `agent` calls and the aborts it sent their parents. */
  subAgents?: SubAgentSummary & { aborts: number };
  violations: readonly Violation[];
}

/** Nearest-rank percentile; undefined for no samples. */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const ms = (v: number | undefined) => (v === undefined ? "n/a" : `${Math.round(v)} ms`);

export function formatReport(r: ReportInput): string[] {
  const lines: string[] = [];
  const mode = r.cluster ? "3-node cluster, replicas 3" : "single nats-server";
  lines.push(`chaos report: seed ${r.seed}, ${r.durationMs / 1000} s, ${r.sessions} sessions, ${mode}`);
  const byKind = FAULT_KINDS.map((k) => [k, r.applied.filter((a) => a.fault.kind === k).length] as const)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`);
  const failedFaults = r.applied.filter((a) => a.error !== undefined).length;
  lines.push(
    `faults: ${r.applied.length} (${byKind.join(", ") || "none"})${failedFaults ? `, ${failedFaults} failed to apply` : ""}`,
  );
  const done = r.prompts.filter((p) => p.done).length;
  const resent = r.prompts.filter((p) => p.sends > 1).length;
  const rejected = r.prompts.filter((p) => p.outcome === "rejected").length;
  lines.push(
    `prompts: ${r.prompts.length} sent, ${done} done, ${resent} re-sent with the same id, ${rejected} rejected`,
  );
  lines.push(`prompt latency: p50 ${ms(percentile(r.latencies, 50))}, p99 ${ms(percentile(r.latencies, 99))}`);
  for (const role of ["loop", "store"] as const) {
    const samples = r.failovers.filter((f) => f.role === role);
    const seen = samples.flatMap((f) => (f.ms === undefined ? [] : [f.ms]));
    const lostKills = samples.filter((f) => f.ms === undefined && f.cause === "kill").length;
    const resumedFirst = samples.filter((f) => f.ms === undefined && f.cause === "pause").length;
    lines.push(
      `failover ${role} (kill/stop -> partitions re-leased): n ${seen.length}, p50 ${ms(percentile(seen, 50))}, max ${ms(
        seen.length ? Math.max(...seen) : undefined,
      )}${lostKills ? `, ${lostKills} kills not re-leased within 60 s` : ""}${
        resumedFirst ? `, ${resumedFirst} stopped workers resumed before a re-lease` : ""
      }`,
    );
  }
  const settled = r.runnerSettle.settledMs;
  lines.push(
    `runner kill -> in-flight calls ended: n ${settled.length}, p50 ${ms(percentile(settled, 50))}, max ${ms(
      settled.length ? Math.max(...settled) : undefined,
    )}${r.runnerSettle.unsettled ? `, ${r.runnerSettle.unsettled} never ended` : ""}`,
  );
  lines.push(`runs resumed: ${r.runsResumed}`);
  lines.push(`SSE clients: ${r.sse.clients}, reconnected ${r.sse.reconnects} times (Last-Event-ID, next gateway)`);
  if (r.webhook) {
    const w = r.webhook;
    lines.push(
      `webhook: ${w.matching} matching events, ${w.requests} POSTs (${w.repeated} of an event already POSTed; the receiver answered ${w.failed} with 500 and ${w.slow} after 1 s); done ${Math.round(w.catchUpMs / 1000)} s after the logs were read`,
    );
  }
  if (r.schedule) {
    const s = r.schedule;
    const holder = s.holderFaults.length
      ? `; the scheduler's holder struck by ${s.holderFaults.length} (${s.holderFaults.join(", ")})`
      : "; no fault struck the scheduler's holder";
    lines.push(
      `schedule ${s.scheduleId}: ${s.slots} slots, ${s.fired} fired, ${s.buffered} buffered, ${s.skipped} skipped, ${s.missed} missed, ${s.failed} failed${s.unsettled ? `, ${s.unsettled} unsettled` : ""}${holder}`,
    );
  }
  if (r.subAgents) {
    const a = r.subAgents;
    lines.push(
      `sub-agents: ${a.calls} agent calls, ${a.answered} answered by their child, ${a.aborted} ended by ${a.aborts} parent aborts (${a.abortedChildren} of their children created); ${a.childrenResumed} children resumed by a new owner; ${a.startFailed} not started (clear error); aborted children spent ${a.abortedChildTokens} tokens outside their parents' totals`,
    );
  }
  const errors = [...r.toolErrors.entries()].sort((a, b) => b[1] - a[1]);
  lines.push(`tool error results: ${errors.reduce((n, [, c]) => n + c, 0)}${errors.length ? ":" : ""}`);
  for (const [text, n] of errors.slice(0, 5)) lines.push(`  ${n}x ${text}`);
  lines.push("invariants:");
  for (const key of Object.keys(INVARIANTS) as Invariant[]) {
    const found = r.violations.filter((v) => v.invariant === key);
    const kinds = [...new Set(found.map((v) => v.kind))].join(", ");
    lines.push(`  ${INVARIANTS[key]}: ${found.length} violations${kinds ? ` (${kinds})` : ""}`);
  }
  for (const v of r.violations.slice(0, 40)) {
    lines.push(`  ! [${INVARIANTS[v.invariant]}] ${v.sessionId ?? "-"} ${v.kind}: ${v.detail}`);
  }
  if (r.violations.length > 40) lines.push(`  … ${r.violations.length - 40} more`);
  lines.push(
    `chaos: ${r.applied.length} faults, ${r.sessions} sessions, ${done} prompts done, ${r.violations.length} violations`,
  );
  return lines;
}
