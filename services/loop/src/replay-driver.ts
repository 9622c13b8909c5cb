// The shell of a replay session (change 51): its recorded tool results, and starting its turns one
// after the other as `prompt` commands decided on the session's fold (`decideReplayTurn`).
import {
  canonicalJson,
  decideReplayTurn,
  type FleetCommand,
  recordedResultOf,
  type SessionState,
} from "@fleet/protocol";
import type { Logger } from "@fleet/runtime";
import type { RemoteToolResult } from "./tool-dispatcher.js";

/**
 * In a replay in `recorded` mode, the result of `call` (the source's, or an error result saying it
 * has none); `undefined` when the session's tools run for real. The rank of the call among the
 * replay's calls with its name and arguments comes from the session's own entries.
 */
export function recordedToolResult(
  state: SessionState,
  call: { toolCallId: string; toolName: string; args: unknown },
): RemoteToolResult | undefined {
  const replay = state.replay;
  if (replay?.toolsMode !== "recorded") return undefined;
  const key = canonicalJson(call.args ?? {});
  let earlier = 0;
  for (const entry of state.tree.entries.slice(replay.kept)) {
    if (entry.type !== "message" || entry.message.role !== "assistant") continue;
    for (const block of entry.message.content) {
      if (block.type !== "toolCall") continue;
      if (block.id === call.toolCallId) return recordedResultOf(replay, call, earlier);
      if (block.name === call.toolName && canonicalJson(block.arguments) === key) earlier++;
    }
  }
  return recordedResultOf(replay, call, earlier);
}

/** What the driver needs of its actor. */
export interface ReplayDriverPorts {
  state: SessionState;
  sessionId: string;
  /** A run, a compaction or a lifecycle operation is in flight, or the actor is gone. */
  busy: () => boolean;
  /** Decides `command` on the fold and appends its events (nothing when its id has an outcome); runs its effects. */
  submit: (command: FleetCommand) => Promise<void>;
  log: Logger;
}

/**
 * `continue()`: when the session is idle and its replay has a turn to run, decides that turn's
 * `prompt` (with its deterministic id, so a turn is decided once whoever owns the session) and
 * starts its run; a refused turn (a budget) ends the replay. Called after every command, run end
 * and recovery; one at a time. Never rejects.
 */
export function createReplayDriver(ports: ReplayDriverPorts): { continue: () => Promise<void> } {
  let driving = false;
  let again = false;
  const drive = async (): Promise<void> => {
    for (let i = 0; i < 10_000; i++) {
      if (ports.busy()) return;
      const step = decideReplayTurn(ports.state);
      if (step.kind === "done" && i > 0) {
        ports.log.info({ evt: "replay_done", turns: step.turns, stopped: step.stopped?.index }, "replay finished");
      }
      if (step.kind !== "turn") return;
      ports.log.info({ evt: "replay_turn", index: step.index }, "starting a replayed turn");
      await ports.submit({ type: "prompt", id: step.commandId, sessionId: ports.sessionId, message: step.message });
      if (!ports.state.commands.has(step.commandId)) return;
    }
  };
  return {
    async continue() {
      if (!ports.state.replay) return;
      if (driving) {
        again = true;
        return;
      }
      driving = true;
      try {
        do {
          again = false;
          await drive();
        } while (again);
      } catch (err) {
        ports.log.warn({ err, evt: "replay_turn_failed" }, "a replayed turn could not start");
      } finally {
        driving = false;
      }
    },
  };
}
