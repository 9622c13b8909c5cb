// Ended sessions of history in the shape real ones leave on the log: created, one prompt's run to
// its end. For tests and benches that need many sessions without running them.
import type { FleetEvent } from "@fleet/protocol";
import { assistantMessage, CONFIG, createLogBuilder, startOf, textOf, userMessage } from "@fleet/protocol/testing";

/** The log of session `sessionId` after one finished run (`seed` varies ids and timestamps). */
export function endedSessionLog(sessionId: string, seed: number): FleetEvent[] {
  const b = createLogBuilder(seed, sessionId);
  const user = userMessage(`question ${seed}`);
  const reply = { ...assistantMessage([textOf(`answer ${seed}`)]), provider: "scripted", model: "scripted" };
  b.add({ type: "session_created", config: CONFIG });
  b.add({ type: "command_accepted", commandId: `c-${sessionId}`, commandType: "prompt" });
  b.add({ type: "agent_start" });
  b.add({ type: "turn_start" });
  b.add({ type: "message_start", message: user });
  b.add({ type: "message_end", message: user });
  b.add({ type: "message_start", message: startOf(reply) });
  b.add({ type: "message_end", message: reply });
  b.add({ type: "turn_end", message: reply, toolResults: [] });
  b.add({ type: "agent_end", messages: [user, reply] });
  return b.events;
}
