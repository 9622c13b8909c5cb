// Carries out the effects a decision returned (`../decide/decision.ts` `Effect`), after its events
// are durable: a run in the engine, an abort, an approval gate released, a compaction, a deletion.
import { runCursorOf } from "@fleet/protocol";
import { sleep } from "@fleet/runtime";
import { stepOfDecision } from "../decide/approval-gate.js";
import { childrenToClose } from "../decide/decide-child.js";
import type { Effect } from "../decide/decision.js";
import { startCompaction } from "./compaction-runner.js";
import { resumeLifecycle } from "./lifecycle-runner.js";
import { toolDefinitions } from "./llm-ports.js";
import { startRun } from "./run-driver.js";
import type { SessionShell } from "./session-shell.js";

/** How long an abort waits for its children's closes to be stored before it aborts the run anyway. */
const ABORT_CLOSE_WAIT_MS = 2_000;

/** Resolves once the effect has begun (a run: once its first message is durable). */
export async function runEffect(shell: SessionShell, effect: Effect): Promise<void> {
  const engine = shell.engine;
  switch (effect.type) {
    case "start_run": {
      engine.setTools(toolDefinitions(shell));
      const messages = effect.kind === "prompt" ? effect.messages : undefined;
      await startRun(shell, () => (messages ? engine.prompt(messages) : engine.continue()));
      return;
    }
    case "abort_run": {
      // The children of started, unended `agent` calls get their close stored before the run is
      // aborted: the engine ends those calls at once, and a worker that died between their ends and
      // a close would leave the child running (nothing resumes an ended call). Bounded: a stream
      // that cannot store it does not hold the abort (the port's own close follows the call).
      // The run the abort was accepted in: the wait below may outlast it (the fold can end it at its
      // turn's end), and a run started since is not the abort's.
      const runId = shell.state.status.runId;
      const sub = shell.deps.subAgents;
      const closing = sub ? childrenToClose(runCursorOf(shell.state)) : [];
      if (sub && closing.length > 0) {
        const closed = sub
          .closeChildren(shell.sessionId, closing, { running: true })
          .catch((err) => shell.log.warn({ err }, "children not closed"));
        const waited = new AbortController();
        await Promise.race([closed, sleep(ABORT_CLOSE_WAIT_MS, waited.signal)]);
        waited.abort();
      }
      engine.abort(runId);
      return;
    }
    case "approval_decided": {
      const decision = shell.state.approvals.get(effect.toolCallId)?.decision;
      const waiter = shell.approvalWaiters.get(effect.toolCallId);
      if (decision && waiter) waiter(stepOfDecision(decision));
      return;
    }
    case "compact":
      startCompaction(shell, effect.compactionId);
      return;
    case "abort_compaction":
      shell.compaction?.abort.abort();
      return;
    case "config_changed":
      engine.noteConfigured({ systemPrompt: effect.systemPrompt });
      return;
    case "delete_session":
    case "restore_session":
      await resumeLifecycle(shell);
      return;
  }
}
