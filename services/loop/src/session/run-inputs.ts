// A live run's inputs as inputs of the runtime core: the engine's ports for each provider chunk of
// an LLM call, each tool result, a turn's end and its boundary, each wired to `decideInput` on the
// session's fold and asked in the delivery order (so on the fold of every event emitted before).
// A fold that decides nothing disagrees with the engine on where the run stands: logged
// `<input kind>_undecided`, and the engine's own step goes out.
import { runCursorOf, streamingMessageOf } from "@fleet/protocol";
import type { RuntimeInput } from "../decide/decide-input.js";
import { decideChunk, decideInput } from "../decide/decide-input.js";
import type { EnginePorts } from "../engine/index.js";
import type { DraftEvent } from "../session-core/drafts.js";
import { isStreamDelta } from "../session-core/provider-chunk.js";
import { flushDrafts } from "../session-core/session-write.js";
import { turnEndBody } from "../session-core/turn-boundary.js";
import { decideContextOf } from "./decide-context.js";
import type { SessionShell } from "./session-shell.js";

type RunInputPorts = Required<
  Pick<EnginePorts, "decideProviderChunk" | "decideToolResult" | "decideTurnEnd" | "decideTurnBoundary">
>;

export function runInputPorts(shell: SessionShell): RunInputPorts {
  return {
    // `decideInput {provider_chunk}` without the rest of the context: it is asked for every delta.
    decideProviderChunk: (chunk) => {
      const decision = decideChunk(shell.state, chunk, isStreamDelta(chunk) ? coalescedId : shell.deps.newId);
      if (decision.kind === "decided" && decision.events.length > 0) return decision.events;
      return undecided(shell, "provider_chunk", { chunk: chunk.type });
    },
    decideToolResult: (input) => decideRunInput(shell, input, { toolCallId: input.toolCallId }),
    // Undecided: the engine's own `turn_end`, with the writes flushed at it (its boundary goes on).
    decideTurnEnd: (turn) => {
      const decided = decideRunInput(shell, TURN_END, {});
      if (decided) return decided;
      const state = shell.state;
      const newId = shell.deps.newId;
      return [
        { id: newId(), body: turnEndBody(turn.message, turn.toolResults) },
        ...flushDrafts(state.pendingWrites, streamingMessageOf(state), newId),
      ];
    },
    decideTurnBoundary: (stop) => decideRunInput(shell, stop ? STOPPED : GOING_ON, {}),
  };
}

function decideRunInput(
  shell: SessionShell,
  input: RuntimeInput,
  detail: Record<string, unknown>,
): readonly DraftEvent[] | undefined {
  const decision = decideInput(shell.state, shell.sessionId, input, decideContextOf(shell));
  if (decision.kind === "decided" && decision.events.length > 0) return decision.events;
  return undecided(shell, input.kind, detail);
}

function undecided(shell: SessionShell, kind: RuntimeInput["kind"], detail: Record<string, unknown>): undefined {
  shell.log.warn(
    { evt: `${kind}_undecided`, ...detail, cursor: runCursorOf(shell.state).kind },
    `the fold decided nothing for a run's ${kind}: the engine's own step is used`,
  );
  return undefined;
}

/**
 * A delta's draft id: the emit port coalesces the delta into a `message_update` that gets an id of
 * its own when it is appended (`createUpdateCoalescer`'s flush), so this one is never used.
 */
const coalescedId = (): string => "";

const TURN_END: RuntimeInput = { kind: "turn_end" };
const STOPPED: RuntimeInput = { kind: "turn_boundary", stop: true };
const GOING_ON: RuntimeInput = { kind: "turn_boundary", stop: false };
