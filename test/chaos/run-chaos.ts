// One chaos run: start the system, load it while the fault schedule runs, let it settle, probe every
// session, collect the records and check the invariants.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient } from "@fleet/client";
import { CHAOS_SCHEDULE_EVERY_MS, createChaosSchedule, readChaosSchedule } from "./chaos-schedule.js";
import { checkCommands } from "./checks/check-commands.js";
import { checkLiveness } from "./checks/check-liveness.js";
import { checkLogShape } from "./checks/check-log-shape.js";
import { checkFiredSessions, checkSchedule, summarizeSchedule } from "./checks/check-schedule.js";
import { checkSse } from "./checks/check-sse.js";
import { checkStore } from "./checks/check-store.js";
import { agentCallsOf, checkSubAgents, emptySubAgentSummary } from "./checks/check-sub-agents.js";
import { checkToolEffects } from "./checks/check-tool-effects.js";
import { checkWebhooks, webhookExpected } from "./checks/check-webhooks.js";
import { measureRunnerSettle } from "./checks/measure-runner-settle.js";
import type { Violation } from "./checks/types.js";
import { collectSession } from "./collect.js";
import { collectChildren, withChildRuns } from "./collect-children.js";
import { diagnoseCommands } from "./command-diagnosis.js";
import { runFaults } from "./fault-runner.js";
import { buildFaultSchedule, formatFault } from "./fault-schedule.js";
import { CHAOS_PARTITIONS, type ChaosOptions } from "./options.js";
import { formatReport } from "./report.js";
import { type SseWatch, watchSession } from "./sse-watch.js";
import { CHAOS_MAX_FILE_STORE, type System, startSystem } from "./system.js";
import {
  CHAOS_WEBHOOK_TYPES,
  registerChaosWebhooks,
  startWebhookReceiver,
  type WebhookReceiver,
} from "./webhook-receiver.js";
import { startWorkload } from "./workload.js";
import { CHAOS_TOOL_POLICIES } from "./workload-plan.js";

const LEASE_TTL_MS = 3_000;
const PARTITIONS = CHAOS_PARTITIONS;
const COMMAND_TIMEOUT_MS = 10_000;
const PROMPT_TIMEOUT_MS = 90_000;
/** How long an SSE client may take, after the logs were read, to have received all of its log. */
const SSE_CATCH_UP_MS = 30_000;
/**
 * The webhook delivers one stream message at a time, so under the run's load it falls behind the
 * log (see the report's catch-up time). After the logs were read it may go on while it makes
 * progress: it fails when no new POST arrived for WEBHOOK_STALL_MS (a delivery cut by a gateway kill
 * comes back after the consumer's ack wait, 15 s, then its retries), or after WEBHOOK_CATCH_UP_MS.
 */
const WEBHOOK_STALL_MS = 30_000;
const WEBHOOK_CATCH_UP_MS = 600_000;

export interface ChaosResult {
  lines: string[];
  violations: number;
}

/** Runs the suite; `onSystem` receives the system once started (for a ctrl-C handler to stop it). */
export async function runChaos(
  o: ChaosOptions,
  log: (line: string) => void,
  onSystem: (system: System | undefined) => void = () => undefined,
): Promise<ChaosResult> {
  const schedule = buildFaultSchedule({
    seed: o.seed,
    durationMs: o.durationMs,
    kinds: o.kinds,
    leaseTtlMs: LEASE_TTL_MS,
    natsNodes: o.cluster ? 3 : 1,
  });
  log(`chaos: seed ${o.seed} (repeat with --seed ${o.seed}), ${schedule.length} faults planned:`);
  for (const f of schedule) log(`  ${formatFault(f)}`);
  log(
    `starting nats${o.cluster ? " cluster" : ""}, redis, fake anthropic, 2 loops, 2 runners, 2 stores, 2 gateways; ${PARTITIONS} partitions in ${o.groups} stream group${o.groups === 1 ? "" : "s"}`,
  );
  // Kept only when the run finds a violation: every service's output and the failing sessions' logs.
  const artifacts = mkdtempSync(join(tmpdir(), `fleet-chaos-${o.seed}-`));
  const logDir = join(artifacts, "services");
  mkdirSync(logDir);
  let keepArtifacts = false;
  const system = await startSystem({
    cluster: o.cluster,
    leaseTtlMs: LEASE_TTL_MS,
    partitions: PARTITIONS,
    groups: o.groups,
    log,
    logDir,
  }).catch((err) => {
    log(`services' output: ${logDir}`);
    throw err;
  });
  onSystem(system);
  let client: FleetClient | undefined;
  // Stopped in `finally` too: a run that fails midway must not leave them reconnecting.
  let watches: SseWatch[] = [];
  let receiver: WebhookReceiver | undefined;
  try {
    const sessionIds = Array.from({ length: o.sessions }, (_, i) => `chaos-${o.seed}-${i}`);
    // A webhook for every session, delivered by the gateways through every fault (with K > 1 it reads
    // every group's stream).
    receiver = await startWebhookReceiver(o.seed);
    const webhooks = await registerChaosWebhooks(system.gatewayUrls, receiver, {
      partitions: PARTITIONS,
      groups: o.groups,
    });
    log(
      `${webhooks.ids.length === 1 ? `webhook ${webhooks.ids[0]} for every session` : `${webhooks.ids.length} webhooks, one per workload session`}: ${CHAOS_WEBHOOK_TYPES.join(", ")}`,
    );
    client = await FleetClient.connect({
      natsUrl: system.natsUrl,
      name: "chaos",
      commandTimeoutMs: COMMAND_TIMEOUT_MS,
    });
    // The schedule fires through the faults and stops at their end.
    const scheduled = await createChaosSchedule(client, o.seed, Date.now() + o.durationMs);
    log(
      `schedule ${scheduled.scheduleId}: every ${CHAOS_SCHEDULE_EVERY_MS / 1000} s a new session, overlap ${scheduled.definition.overlap}, catch-up ${scheduled.definition.catchupWindowMs / 1000} s`,
    );
    const startedAt = Date.now();
    log(`running ${o.sessions} sessions for ${o.durationMs / 1000} s`);
    const workload = startWorkload({
      client,
      sessionIds,
      commandTimeoutMs: COMMAND_TIMEOUT_MS,
      promptTimeoutMs: PROMPT_TIMEOUT_MS,
      log,
    });
    // One SSE client per session, through the gateways (session i starts on gateway i % 2).
    watches = sessionIds.map((id, i) => watchSession(system.gatewayUrls, id, i));
    const faults = await runFaults(system, client.nc, schedule, {
      startedAt,
      partitions: PARTITIONS,
      groups: o.groups,
      log,
    });
    const rest = startedAt + o.durationMs - Date.now();
    if (rest > 0) await new Promise((r) => setTimeout(r, rest));
    log("faults over: draining the workload, then one probe prompt per session");
    await workload.drain();
    await workload.probe();
    const failovers = await Promise.all(faults.failovers);
    const c = client;
    const account = await c.jsm.getAccountInfo().catch(() => undefined);
    const mb = (n: number) => `${Math.round(n / 1024 ** 2)} MB`;
    if (account) log(`JetStream file storage used: ${mb(account.storage)} of ${mb(CHAOS_MAX_FILE_STORE)} per server`);
    log("collecting logs, tool side effects and store answers");
    const records = await Promise.all(sessionIds.map((id) => collectSession(c, system.workspace, id)));
    const children = await collectChildren(
      c,
      system.workspace,
      records.map((r) => r.log),
    );
    const childRecords = [...children.values()].filter((r) => r.log.events.length > 0);
    log(`collected ${childRecords.length} child sessions of ${children.size} agent calls`);
    log(`waiting for the schedule's slots to settle, then reading its log and sessions`);
    const slots = await readChaosSchedule(c, system.workspace, scheduled.scheduleId, log);
    log("waiting for every SSE client to have received its session's log");
    const sseReceived = await Promise.all(
      watches.map(async (w, i) => {
        const upTo = records[i]?.log.lastSeq ?? 0;
        await w.reached(upTo, SSE_CATCH_UP_MS);
        w.stop();
        // Events appended after the log was read are not compared.
        return w.received.filter((r) => r.seq <= upTo);
      }),
    );

    log("waiting for the webhook to have delivered every matching event");
    const hookTypes = new Set(CHAOS_WEBHOOK_TYPES);
    const hooked = receiver;
    const hookedRecords = [...records, ...slots.fired].map((r) => ({
      r,
      startSeq: webhooks.startSeqOf(r.log.sessionId),
    }));
    const expected = hookedRecords.flatMap(({ r, startSeq }) => webhookExpected(r.log, hookTypes, startSeq));
    const deliveredAll = () => {
      const ok = new Set(hooked.received.filter((d) => d.accepted).map((d) => d.seq));
      return expected.every((seq) => ok.has(seq));
    };
    const catchUpStarted = Date.now();
    let progressAt = catchUpStarted;
    let seenPosts = hooked.received.length;
    while (!deliveredAll() && Date.now() - catchUpStarted < WEBHOOK_CATCH_UP_MS) {
      if (hooked.received.length > seenPosts) {
        seenPosts = hooked.received.length;
        progressAt = Date.now();
      } else if (Date.now() - progressAt > WEBHOOK_STALL_MS) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const catchUpMs = Date.now() - catchUpStarted;
    const deliveries = hooked.received.slice();

    const violations: Violation[] = [];
    const subAgents = emptySubAgentSummary();
    const childLogs = new Map([...children].map(([id, r]) => [id, r.log]));
    const toolErrors = new Map<string, number>();
    let runsResumed = 0;
    for (const [i, r] of records.entries()) {
      violations.push(
        ...checkSse(r.log, sseReceived[i] ?? []),
        ...checkCommands(r.log, workload.prompts),
        ...checkLogShape(r.log),
        ...checkToolEffects(
          r.log,
          withChildRuns(r.log, r.executions, children),
          CHAOS_TOOL_POLICIES,
          workload.aborts.filter((a) => a.sessionId === r.log.sessionId).length,
        ),
        ...checkStore(r.log, r.store),
        ...checkLiveness(r.log, workload.prompts),
        ...checkSubAgents(r.log, childLogs, subAgents),
      );
    }
    // Each child's own log, tools and store answer (a child's abort comes from its parent's loop).
    for (const r of childRecords) {
      const closed = r.log.events.some((e) => e.type === "command_accepted" && e.commandType === "abort");
      violations.push(
        ...checkLogShape(r.log),
        ...checkToolEffects(r.log, r.executions, CHAOS_TOOL_POLICIES, closed ? 1 : 0),
        ...checkStore(r.log, r.store),
      );
    }
    violations.push(...checkSchedule(slots.run), ...checkFiredSessions(slots.run, slots.fired, CHAOS_TOOL_POLICIES));
    for (const { r, startSeq } of hookedRecords) {
      violations.push(
        ...checkWebhooks(
          r.log,
          deliveries.filter((d) => d.sessionId === r.log.sessionId),
          hookTypes,
          startSeq,
          webhooks.keyPrefixOf(r.log.sessionId),
        ),
      );
    }
    for (const r of [...records, ...slots.fired, ...childRecords]) {
      for (const e of r.log.events) {
        if (e.type === "run_resumed") runsResumed++;
        if (e.type === "tool_execution_end" && e.isError) {
          const text = e.result.content
            .map((c) => (c.type === "text" ? c.text : ""))
            .join(" ")
            .slice(0, 80);
          toolErrors.set(text, (toolErrors.get(text) ?? 0) + 1);
        }
      }
    }
    for (const slot of system.all) {
      for (const exit of slot.unexpectedExits) {
        violations.push({ invariant: "processes", kind: "process_exit", detail: exit });
      }
    }
    const runnerKills = faults.applied
      .filter((a) => a.fault.kind === "kill_runner")
      .map((a) => startedAt + a.startedMs);
    const runnerSettle = measureRunnerSettle(
      [...records, ...slots.fired].map((r) => r.log),
      runnerKills,
    );
    const failing = new Set(violations.flatMap((v) => (v.sessionId === undefined ? [] : [v.sessionId])));
    // A failing parent's children are kept with it (where its calls' answers came from), and a
    // failing child's parent with it (where its commands came from).
    for (const r of records) {
      const calls = agentCallsOf(r.log);
      if (failing.has(r.log.sessionId) || calls.some((c) => failing.has(c.childId))) {
        failing.add(r.log.sessionId);
        for (const call of calls) failing.add(call.childId);
      }
    }
    if (violations.length > 0) {
      keepArtifacts = true;
      const sessionsDir = join(artifacts, "sessions");
      mkdirSync(sessionsDir);
      for (const r of [...records, ...slots.fired, ...childRecords].filter((r) => failing.has(r.log.sessionId))) {
        const jsonl = r.log.events.map((e, i) => JSON.stringify({ seq: r.log.seqs?.[i], ...e })).join("\n");
        writeFileSync(join(sessionsDir, `${r.log.sessionId}.jsonl`), `${jsonl}\n`);
        // What its SSE client and the webhook received, beside the log (seq per event above).
        const sse = sseReceived[records.indexOf(r)] ?? [];
        const hooks = deliveries.filter((d) => d.sessionId === r.log.sessionId);
        writeFileSync(join(sessionsDir, `${r.log.sessionId}.received.json`), `${JSON.stringify({ sse, hooks })}\n`);
      }
      writeFileSync(join(artifacts, "violations.json"), `${JSON.stringify(violations, null, 1)}\n`);
      const scheduleLog = slots.run.events.map((e) => JSON.stringify(e)).join("\n");
      writeFileSync(join(artifacts, `schedule-${scheduled.scheduleId}.jsonl`), `${scheduleLog}\n`);
      const lost = violations.flatMap((v) => {
        const commandId = /^command (\S+) /.exec(v.detail)?.[1];
        return v.kind === "no_outcome" && v.sessionId !== undefined && commandId !== undefined
          ? [{ sessionId: v.sessionId, commandId }]
          : [];
      });
      if (lost.length > 0) {
        const diagnosis = await diagnoseCommands(c.nc, PARTITIONS, lost);
        writeFileSync(join(artifacts, "commands.json"), `${JSON.stringify(diagnosis, null, 2)}\n`);
      }
      log(`artifacts: ${artifacts} (services/*.log, sessions/<id>.jsonl of the ${failing.size} failing sessions)`);
    }
    const lines = formatReport({
      seed: o.seed,
      durationMs: o.durationMs,
      sessions: o.sessions,
      cluster: o.cluster,
      applied: faults.applied,
      prompts: workload.prompts,
      latencies: workload.latencies,
      failovers,
      runsResumed,
      runnerSettle,
      sse: { clients: watches.length, reconnects: watches.reduce((n, w) => n + w.reconnects(), 0) },
      webhook: {
        matching: expected.length,
        requests: deliveries.length,
        repeated: deliveries.length - new Set(deliveries.map((d) => d.seq)).size,
        failed: hooked.failed(),
        slow: hooked.slow(),
        catchUpMs,
      },
      toolErrors,
      subAgents: { ...subAgents, aborts: workload.aborts.length },
      schedule: {
        ...summarizeSchedule(slots.run),
        unsettled: slots.unsettled,
        holderFaults: faults.applied.filter((a) => a.schedulerHolder).map((a) => a.fault.kind),
      },
      violations,
    });
    return { lines, violations: violations.length };
  } finally {
    for (const w of watches) w.stop();
    await receiver?.close();
    await client?.close().catch(() => undefined);
    await system.stop();
    onSystem(undefined);
    if (!keepArtifacts) rmSync(artifacts, { recursive: true, force: true });
  }
}
