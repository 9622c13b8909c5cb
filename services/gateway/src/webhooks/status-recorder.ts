// Records a deliverer's attempts in its webhook's status: each write carries every attempt made
// since the last one, so a fast receiver costs one compare-and-set per batch, not per event.
import type { Logger } from "pino";
import type { DeliveryAttempt } from "./webhook-record.js";
import type { WebhookStore } from "./webhook-store.js";

export interface StatusRecorder {
  /** Queues an attempt; it is written with the next write. */
  add(attempt: DeliveryAttempt): void;
  /**
   * Writes what is queued (waiting for a write in progress first); the run of failures after it,
   * or undefined when the status could not be written (logged).
   */
  flush(): Promise<number | undefined>;
}

export function createStatusRecorder(store: WebhookStore, webhookId: string, log: Logger): StatusRecorder {
  let queued: DeliveryAttempt[] = [];
  /** The run of failures after the last write (undefined when it failed). */
  let failures: number | undefined;
  let writing: Promise<number | undefined> = Promise.resolve(undefined);
  const write = async (): Promise<number | undefined> => {
    if (queued.length === 0) return failures;
    const batch = queued;
    queued = [];
    try {
      failures = (await store.recordAttempts(webhookId, batch)).consecutiveFailures;
    } catch (err) {
      failures = undefined;
      log.warn(
        { evt: "gateway_webhook_status_failed", err, attempts: batch.length },
        "could not record webhook attempts",
      );
    }
    return failures;
  };
  return {
    add(attempt) {
      queued.push(attempt);
      // One write at a time; whatever arrives meanwhile goes with the next.
      writing = writing.then(write);
    },
    flush() {
      writing = writing.then(write);
      return writing;
    },
  };
}
