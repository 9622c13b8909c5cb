import { sleep } from "@fleet/runtime";
import {
  createScriptedProvider,
  type Script,
  type ScriptTurnInput,
  type Sleep,
  type StreamFn,
} from "./engine/index.js";
import { prepareReplayMessages } from "./providers/index.js";

/**
 * The service's `scripted` provider. Deterministic across workers and crash resumes: the response to
 * a request is turn `k mod n` of the script, where `k` is the number of assistant messages a real
 * provider would be sent (`prepareReplayMessages`, which drops those ended by an error or an abort).
 * A message cut by a worker's crash is closed as an error, so its resumed run is served the same turn
 * again. Tool call ids get a `-<k>` suffix, so repeated turns never collide with an earlier
 * call's stored result.
 */
export function createScriptedStreamFn(script: Script, ports: { now: () => number; sleep: Sleep }): StreamFn {
  const { turns, ...options } = script;
  return (context, streamOptions, signal) => {
    const k = prepareReplayMessages(context.messages, streamOptions.model).filter((m) => m.role === "assistant").length;
    const turn = turns.length > 0 ? turns[k % turns.length] : undefined;
    const step: ScriptTurnInput = turn
      ? {
          ...turn,
          content: turn.content.map((b) => (b.type === "toolCall" ? { ...b, id: `${b.id}-${k}` } : b)),
        }
      : { error: "The script has no turns" };
    const provider = createScriptedProvider({ ...options, ...ports, steps: [step] });
    return provider.streamFn(context, streamOptions, signal);
  };
}

/** The real-timer Sleep port (resolves early on abort). */
export const realSleep: Sleep = sleep;
