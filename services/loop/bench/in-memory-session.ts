// A session fold kept in memory for the benches: the engine reads it, and the emit port folds each
// event into it as the service's shell does after an append (the fold is part of the real cost).
import {
  evolveSession,
  type FleetEvent,
  foldSessionEvents,
  type SessionConfig,
  type SessionState,
} from "@fleet/protocol";
import type { Emit } from "../src/engine/index.js";

export function inMemorySession(sessionId: string, config: SessionConfig): { session: SessionState; emit: Emit } {
  const meta = (id: string, runId?: string) => ({
    v: 1 as const,
    id,
    sessionId,
    ts: Date.now(),
    ...(runId ? { runId } : {}),
    producer: "bench",
  });
  const session = foldSessionEvents([{ type: "session_created", config, meta: meta(`${sessionId}-0`) }]);
  const emit: Emit = (event) => {
    evolveSession(session, { ...event.body, meta: meta(event.id, event.runId) } as FleetEvent);
  };
  return { session, emit };
}
