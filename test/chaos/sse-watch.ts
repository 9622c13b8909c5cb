// One SSE client per session through the gateways, as a browser's EventSource behaves: after every
// drop or refused connection it reconnects with `Last-Event-ID`, each time to the next gateway, and
// it records every event it received, in order. Its records are checked against the log afterwards.
import { openSse } from "@fleet/gateway/testing";
import type { SseReceived } from "./checks/types.js";

export interface SseWatch {
  readonly sessionId: string;
  /** Every event frame received, in arrival order. */
  readonly received: SseReceived[];
  /** Streams opened after the first (drops and refusals both count). */
  reconnects(): number;
  /** Resolves true once an event at `seq` or later arrived, false after `timeoutMs`. */
  reached(seq: number, timeoutMs: number): Promise<boolean>;
  stop(): void;
}

const RETRY_MS = 250;

export function watchSession(gatewayUrls: readonly string[], sessionId: string, first: number): SseWatch {
  const received: SseReceived[] = [];
  let attempts = 0;
  let stopped = false;
  let close: (() => void) | undefined;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  void (async () => {
    for (let next = first; !stopped; next++) {
      attempts++;
      const base = gatewayUrls[next % gatewayUrls.length] as string;
      const last = received.at(-1);
      const headers: Record<string, string> = last ? { "last-event-id": String(last.seq) } : {};
      try {
        const sse = await openSse(`${base}/v1/sessions/${sessionId}/events`, headers);
        close = sse.close;
        // 404 until the workload created the session; 503 while the gateway has no NATS.
        if (sse.status !== 200) sse.close();
        else {
          for await (const frame of sse.frames) {
            if (frame.id === undefined || frame.data === undefined) continue;
            received.push({ seq: Number(frame.id), type: frame.event ?? "", eventId: eventIdOf(frame.data) });
          }
        }
      } catch {
        // Refused (the gateway is down) or reset: try the next one.
      }
      close = undefined;
      if (!stopped) await sleep(RETRY_MS);
    }
  })();

  return {
    sessionId,
    received,
    reconnects: () => Math.max(0, attempts - 1),
    async reached(seq, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      const at = () => received.at(-1)?.seq ?? 0;
      while (at() < seq && Date.now() < deadline) await sleep(100);
      return at() >= seq;
    },
    stop() {
      stopped = true;
      close?.();
    },
  };
}

function eventIdOf(data: string): string {
  try {
    return String((JSON.parse(data) as { meta?: { id?: unknown } }).meta?.id ?? "");
  } catch {
    return "";
  }
}
