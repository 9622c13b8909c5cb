// The shell's side of a run: starting one in the engine and waiting for its first durable message,
// and the engine's `emit` port (deltas coalesced, every other event appended after them, a child's
// answer stored for its parent before its `agent_end`).
import type { EngineEvent, RunResult } from "../engine/index.js";
import { appendEvent, killShell, type SessionShell, stamp } from "./session-shell.js";

/** Starts a run and resolves once its first message is durable (or the run settled). */
export async function startRun(shell: SessionShell, start: () => Promise<RunResult>): Promise<void> {
  const firstMessage = new Promise<void>((resolve) => shell.messageEndWaiters.push(resolve));
  const metrics = shell.deps.metrics;
  metrics.activeRuns.inc();
  const run = start()
    .then(async (result) => {
      if (result.status === "emit_failed" && !shell.detached) killShell(shell, `write failed: ${result.error.message}`);
      await shell.coalescer.drain().catch(() => undefined);
    })
    .catch((err) => killShell(shell, `run failed: ${(err as Error).message}`))
    .finally(() => {
      metrics.activeRuns.dec();
      shell.lastUsed = shell.deps.now();
      shell.freshToolCalls.clear();
      for (const w of shell.messageEndWaiters.splice(0)) w();
    })
    .then(() => shell.replay.continue());
  await Promise.race([firstMessage, run]);
}

/** The engine's port: deltas are coalesced (at once, no promise per delta); every other event is appended after them. */
export function emitEngineEvent(shell: SessionShell, event: EngineEvent): Promise<void> | undefined {
  if (shell.detached) throw new Error("actor detached");
  if (event.body.type === "message_update") {
    shell.coalescedRunId = event.runId;
    shell.coalescer.push(event.body.deltas);
    return undefined;
  }
  return emitAppended(shell, event);
}

async function emitAppended(shell: SessionShell, event: EngineEvent): Promise<void> {
  await shell.coalescer.drain();
  const body = event.body;
  const parent = shell.state.parent;
  const sub = parent ? shell.deps.subAgents : undefined;
  // A child's answer is stored for its parent before its `agent_end`: a crash between the two
  // resumes the run, which ends again and stores the same answer (same msgID).
  if (sub && parent && body.type === "agent_end") {
    const runId = event.runId ?? event.id;
    const end = { runId, epoch: shell.deps.epoch, messages: body.messages, spent: shell.state.spend.run };
    await sub.childFinished(shell.sessionId, parent, end);
  }
  const stamped = stamp(shell, { id: event.id, body }, event.runId);
  await appendEvent(shell, stamped);
  if (sub && parent) sub.childEvent(shell.sessionId, parent, stamped, shell.deps.writeGate);
  if (body.type === "message_end" && body.message.role === "assistant") {
    for (const c of body.message.content) if (c.type === "toolCall") shell.freshToolCalls.add(c.id);
  }
}
