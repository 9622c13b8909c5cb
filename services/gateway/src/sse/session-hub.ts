// One live tail per session, fanned out to every SSE client of that session in this gateway.
import type { FleetClient } from "@fleet/client";
import type { Logger } from "pino";
import { type EncodedFrame, encodeFrame, eventFrameParts } from "./frame.js";

/** A client of a hub: gets every live frame from the sequence it joined at on. */
export interface HubListener {
  /** `frame` is encoded once for every listener of the hub, and shared: never modified. */
  deliver(seq: number, frame: EncodedFrame): void;
}

/**
 * Contract: `nextSeq` is the sequence after the last one fanned out; every event of the session
 * below `nextSeq` either was fanned out or existed before the hub started. A listener added when
 * `nextSeq` is J receives every later event (J and up) in order, so it reads the events before J
 * from the stream itself. Delivery is synchronous and never waits for a listener.
 */
export class SessionHub {
  readonly sessionId: string;
  nextSeq: number;
  readonly listeners = new Set<HubListener>();
  readonly #abort = new AbortController();
  #idleTimer: NodeJS.Timeout | undefined;

  private constructor(sessionId: string, nextSeq: number) {
    this.sessionId = sessionId;
    this.nextSeq = nextSeq;
  }

  /** Starts the tail after the session's current last event. */
  static async start(client: FleetClient, sessionId: string, logger: Logger): Promise<SessionHub> {
    const last = await client.lastSeq(sessionId);
    const hub = new SessionHub(sessionId, last + 1);
    void hub.#run(client, logger);
    return hub;
  }

  get stopped(): boolean {
    return this.#abort.signal.aborted;
  }

  stop(): void {
    this.cancelIdle();
    this.#abort.abort();
  }

  /** Stops the hub after `ms` unless a listener joins first. */
  stopWhenIdle(ms: number, onStop: () => void): void {
    this.cancelIdle();
    this.#idleTimer = setTimeout(() => {
      if (this.listeners.size > 0) return;
      this.stop();
      onStop();
    }, ms);
    this.#idleTimer.unref();
  }

  cancelIdle(): void {
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
  }

  async #run(client: FleetClient, logger: Logger): Promise<void> {
    const log = logger.child({ sessionId: this.sessionId });
    try {
      const items = client.eventRecords(this.sessionId, {
        from: this.nextSeq,
        signal: this.#abort.signal,
        onInvalid: (seq, error) => {
          log.warn({ evt: "gateway_invalid_event", seq, error }, "skipped an undecodable event");
          this.nextSeq = Math.max(this.nextSeq, seq + 1);
        },
        onResume: (next) => log.debug({ evt: "gateway_tail_resumed", next }, "tail resumed"),
      });
      for await (const { seq, event, data } of items) {
        if (seq < this.nextSeq) continue;
        this.nextSeq = seq + 1;
        const frame = encodeFrame(eventFrameParts(seq, event, data));
        for (const listener of this.listeners) listener.deliver(seq, frame);
      }
    } catch (err) {
      if (!this.stopped) log.error({ evt: "gateway_tail_failed", err }, "session tail failed");
    }
  }
}
