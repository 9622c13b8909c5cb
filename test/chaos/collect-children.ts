// After the run: the child sessions the workload's `agent` calls named (issue 29), as plain records.
// A child never created (its parent was aborted first) has an empty log and no store answer.
import { join } from "node:path";
import type { FleetClient } from "@fleet/client";
import { agentCallsOf } from "./checks/check-sub-agents.js";
import type { SessionLog } from "./checks/types.js";
import { askStore, readLog, retry, type SessionRecords } from "./collect.js";
import { countExecutions } from "./workload-plan.js";

/** The records of every child named by the parents' logs, by child id. */
export async function collectChildren(
  client: FleetClient,
  workspace: string,
  parents: readonly SessionLog[],
): Promise<Map<string, SessionRecords>> {
  const ids = parents.flatMap((p) => agentCallsOf(p).map((c) => c.childId));
  const records = await Promise.all(
    ids.map(async (id): Promise<SessionRecords> => {
      const log = await retry(() => readLog(client, id));
      if (log.events.length === 0) return { log, executions: new Map(), store: { sessionId: id } };
      return {
        log,
        executions: countExecutions(join(workspace, id)),
        store: await askStore(client, id, log.lastSeq ?? 0),
      };
    }),
  );
  return new Map(records.map((r) => [r.log.sessionId, r]));
}

/**
 * A parent's executions with each `agent` call counted as its child's runs (for the tools check:
 * a call with a successful result ran at least once).
 */
export function withChildRuns(
  parent: SessionLog,
  executions: ReadonlyMap<string, number>,
  children: ReadonlyMap<string, SessionRecords>,
): Map<string, number> {
  const out = new Map(executions);
  for (const call of agentCallsOf(parent)) {
    const events = children.get(call.childId)?.log.events ?? [];
    out.set(call.toolCallId, events.filter((e) => e.type === "agent_start").length);
  }
  return out;
}
