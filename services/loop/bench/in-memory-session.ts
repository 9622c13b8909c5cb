// A session fold kept in memory for the benches: the engine reads it, and the emit port stamps each
// event and folds it into it, as the service's shell does around an append (both are part of the
// real cost; the append itself is not). As in the shell, `message_update` deltas are coalesced:
// they are stamped and folded as one event, up to COALESCE_DELTAS at a time, before any other event
// (the shell's window never closes inside a synchronous in-memory run).
import {
  evolveSession,
  type FleetEvent,
  initialSessionState,
  type SessionConfig,
  type SessionState,
  type StreamDelta,
} from "@fleet/protocol";
import { type StampContext, stampOwnedDraft } from "../src/decide/stamp-draft.js";
import type { Emit, EngineEvent } from "../src/engine/index.js";
import type { DraftEvent } from "../src/session-core/drafts.js";

/** The shell's default (`FLEET_COALESCE_DELTAS`). */
const COALESCE_DELTAS = 64;

interface Port {
  session: SessionState;
  /** Reused for every event (stampDraft reads its arguments and keeps none of them). */
  draft: DraftEvent;
  stamp: StampContext;
  /** Deltas not folded yet, with the id and run of the first update that carried them. */
  deltas: StreamDelta[];
  deltasId: string;
  deltasRunId: string | undefined;
  observe: ((event: FleetEvent) => void) | undefined;
}

/** `observe` sees every event as folded, from `session_created` on (the fold bench records logs with it). */
export function inMemorySession(
  sessionId: string,
  config: SessionConfig,
  observe?: (event: FleetEvent) => void,
): { session: SessionState; emit: Emit } {
  const port: Port = {
    session: initialSessionState(),
    draft: { id: "", body: { type: "agent_start" } },
    stamp: { sessionId, producer: "bench", now: 0, runId: undefined },
    deltas: [],
    deltasId: "",
    deltasRunId: undefined,
    observe,
  };
  fold(port, `${sessionId}-0`, { type: "session_created", config }, undefined);
  // A module function bound to the port, not a closure: its optimised code outlives each session.
  return { session: port.session, emit: append.bind(port) };
}

function append(this: Port, event: EngineEvent): void {
  const body = event.body;
  if (body.type === "message_update") {
    if (this.deltas.length === 0) {
      this.deltasId = event.id;
      this.deltasRunId = event.runId;
    }
    for (const delta of body.deltas) this.deltas.push(delta);
    if (this.deltas.length >= COALESCE_DELTAS) flushDeltas(this);
    return;
  }
  if (this.deltas.length > 0) flushDeltas(this);
  fold(this, event.id, body, event.runId);
}

function flushDeltas(port: Port): void {
  const deltas = port.deltas;
  port.deltas = [];
  fold(port, port.deltasId, { type: "message_update", deltas }, port.deltasRunId);
}

function fold(port: Port, id: string, body: DraftEvent["body"], runId: string | undefined): void {
  const { draft, stamp } = port;
  draft.id = id;
  draft.body = body;
  stamp.now = Date.now();
  stamp.runId = runId;
  const stamped = stampOwnedDraft(port.session, draft, stamp);
  evolveSession(port.session, stamped);
  port.observe?.(stamped);
}
