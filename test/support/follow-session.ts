// Follows a session's events from the start through the SDK, which resumes across reconnects by sequence.
import type { FleetClient, SessionEventItem } from "@fleet/client";
import type { FleetEvent } from "@fleet/protocol";

export interface FollowedSession {
  /** Every event received so far, with its stream sequence. */
  readonly seen: SessionEventItem[];
  events(): FleetEvent[];
  /** Resolves once `cond` holds for the events received; fails after `timeoutMs`, naming `what`. */
  until(what: string, cond: (events: FleetEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  stop(): void;
}

export function followSession(client: FleetClient, sessionId: string): FollowedSession {
  const seen: SessionEventItem[] = [];
  const ac = new AbortController();
  void (async () => {
    try {
      for await (const item of client.events(sessionId, { signal: ac.signal })) seen.push(item);
    } catch {
      // stopped
    }
  })();
  const events = () => seen.map((s) => s.event);
  return {
    seen,
    events,
    stop: () => ac.abort(),
    async until(what, cond, timeoutMs = 60_000) {
      const end = Date.now() + timeoutMs;
      while (!cond(events())) {
        if (Date.now() > end) throw new Error(`no ${what} within ${timeoutMs} ms: ${events().map((e) => e.type)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
}
