// The hubs of one NATS connection: created on the first listener, stopped a while after the last.
import type { FleetClient } from "@fleet/client";
import type { Logger } from "pino";
import { type HubListener, SessionHub } from "./session-hub.js";

export interface HubRegistry {
  /** Adds a listener; resolves with the sequence it joined at (it gets every event from there on). */
  join(sessionId: string, listener: HubListener): Promise<{ hub: SessionHub; joinSeq: number }>;
  leave(hub: SessionHub, listener: HubListener): void;
  /** The running hub of a session, if any. */
  get(sessionId: string): SessionHub | undefined;
  readonly size: number;
  stopAll(): void;
  /**
   * Stops and forgets a session's hub (the session was deleted or archived): the next client finds
   * out from the log whether the session exists. Its listeners get nothing more.
   */
  forget(sessionId: string): void;
}

/** `idleMs`: how long a hub without listeners keeps its tail (a reconnecting client finds it warm). */
export function createHubRegistry(client: FleetClient, logger: Logger, idleMs = 5_000): HubRegistry {
  const hubs = new Map<string, SessionHub>();
  const starting = new Map<string, Promise<SessionHub>>();

  const hubFor = async (sessionId: string): Promise<SessionHub> => {
    const running = hubs.get(sessionId);
    if (running && !running.stopped) return running;
    let pending = starting.get(sessionId);
    if (!pending) {
      pending = SessionHub.start(client, sessionId, logger).finally(() => starting.delete(sessionId));
      starting.set(sessionId, pending);
      const hub = await pending;
      hubs.set(sessionId, hub);
      return hub;
    }
    return pending;
  };

  return {
    async join(sessionId, listener) {
      const hub = await hubFor(sessionId);
      hub.cancelIdle();
      hub.listeners.add(listener);
      return { hub, joinSeq: hub.nextSeq };
    },
    leave(hub, listener) {
      hub.listeners.delete(listener);
      if (hub.listeners.size > 0) return;
      hub.stopWhenIdle(idleMs, () => {
        if (hubs.get(hub.sessionId) === hub) hubs.delete(hub.sessionId);
      });
    },
    get: (sessionId) => {
      const hub = hubs.get(sessionId);
      return hub && !hub.stopped ? hub : undefined;
    },
    get size() {
      return hubs.size;
    },
    stopAll() {
      for (const hub of hubs.values()) hub.stop();
      hubs.clear();
    },
    forget(sessionId) {
      hubs.get(sessionId)?.stop();
      hubs.delete(sessionId);
    },
  };
}
