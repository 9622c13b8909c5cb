// After the run: each session's log, its tools' side effects and the store's answers, as plain records.
import { join } from "node:path";
import type { FleetClient } from "@fleet/client";
import { decodeEvent, type FleetEvent } from "@fleet/protocol";
import { readSubject } from "@fleet/runtime";
import type { SessionLog, StoreAnswer } from "./checks/types.js";
import { countExecutions } from "./workload-plan.js";

export interface SessionRecords {
  log: SessionLog;
  executions: Map<string, number>;
  store: StoreAnswer;
}

const ATTEMPTS = 5;
const STORE_WAIT_MS = 30_000;

export async function collectSession(
  client: FleetClient,
  workspace: string,
  sessionId: string,
): Promise<SessionRecords> {
  const log = await retry(() => readLog(client, sessionId));
  const lastSeq = await retry(() => client.lastSeq(sessionId));
  return {
    log,
    executions: countExecutions(join(workspace, sessionId)),
    store: await askStore(client, sessionId, lastSeq),
  };
}

export async function readLog(client: FleetClient, sessionId: string): Promise<SessionLog> {
  const events: FleetEvent[] = [];
  const seqs: number[] = [];
  let invalid = 0;
  let lastSeq = 0;
  // The session's stream group's stream (FLEET_EVENTS when K = 1).
  const subject = client.eventSubject(sessionId);
  for await (const record of readSubject(client.js, client.jsm, client.eventStream(sessionId), subject)) {
    lastSeq = record.seq;
    const decoded = decodeEvent(record.data);
    if (decoded.ok) {
      events.push(decoded.value);
      seqs.push(record.seq);
    } else invalid++;
  }
  return { sessionId, events, invalid, lastSeq, seqs };
}

/**
 * get_context and get_tree once the store has applied `minSeq`; the last error when it has not
 * answered within STORE_WAIT_MS.
 */
export async function askStore(client: FleetClient, sessionId: string, minSeq: number): Promise<StoreAnswer> {
  let error = "";
  const deadline = Date.now() + STORE_WAIT_MS;
  let attempt = 0;
  while (Date.now() < deadline) {
    attempt++;
    try {
      const context = await client.getContext(sessionId, { minSeq, timeoutMs: 5_000 });
      const tree = await client.getTree(sessionId, { minSeq });
      return { sessionId, context, tree };
    } catch (err) {
      error = `${(err as { code?: string }).code ?? "error"}: ${(err as Error).message}`;
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
  return { sessionId, error: `after ${attempt} attempts in ${STORE_WAIT_MS / 1000} s: ${error}` };
}

export async function retry<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= ATTEMPTS) throw err;
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}
