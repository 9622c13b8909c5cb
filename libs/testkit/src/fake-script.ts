// The scripted half shared by the LLM API fakes: the recorded requests, the queue of answers, the
// fallback responder, and waiting on requests and their outcomes.

import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { type RequestOutcome, waitForChange } from "./fake-http.js";

/** The fields of a recorded request the script reads and updates. */
export interface ScriptedRecord {
  readonly index: number;
  outcome: RequestOutcome;
}

/** The caller-facing part of a fake: what `FakeAnthropic` and `FakeOpenAI` expose beside their url. */
export interface FakeScriptControls<R extends ScriptedRecord, A> {
  /** Every request in arrival order (live array; `reset()` empties it). */
  readonly requests: readonly R[];
  /** Appends answers (or per-request responders) to the queue. */
  script(...answers: readonly (A | ((request: R) => A))[]): void;
  /** Sets (or clears) the responder used when the queue is empty. */
  respondWith(responder: ((request: R) => A) | undefined): void;
  /** Number of scripted answers not yet consumed. */
  pendingReplies(): number;
  /** Resolves with request `index` once it has arrived; rejects after `timeoutMs` (default 5000). */
  waitForRequest(index: number, timeoutMs?: number): Promise<R>;
  /** Resolves once request `index`'s response has ended (completed or closed); rejects after `timeoutMs`. */
  waitForOutcome(index: number, timeoutMs?: number): Promise<Exclude<RequestOutcome, "pending">>;
  /** Clears the queue, the fallback responder and the recorded requests. */
  reset(): void;
}

export interface FakeScript<R extends ScriptedRecord, A> {
  readonly controls: FakeScriptControls<R, A>;
  /** Records `record` (index = `nextIndex()`) and follows its response to its outcome. */
  record(record: R, res: ServerResponse, isStopping: () => boolean): void;
  nextIndex(): number;
  /** The next answer for `record`: the queue's, else the fallback's; an error text when there is none or it threw. */
  answer(record: R): { ok: true; answer: A } | { ok: false; error: string };
}

export function createFakeScript<R extends ScriptedRecord, A>(fake: string): FakeScript<R, A> {
  const requests: R[] = [];
  const queue: (A | ((request: R) => A))[] = [];
  const changes = new EventEmitter();
  changes.setMaxListeners(0);
  let fallback: ((request: R) => A) | undefined;
  const waitFor = <T>(what: string, timeoutMs: number, probe: () => T | undefined): Promise<T> =>
    waitForChange(changes, fake, what, timeoutMs, probe);

  return {
    nextIndex: () => requests.length,
    record(record, res, isStopping) {
      requests.push(record);
      res.on("close", () => {
        if (record.outcome !== "pending") return;
        record.outcome = res.writableFinished ? "completed" : isStopping() ? "server_closed" : "client_closed";
        changes.emit("change");
      });
      changes.emit("change");
    },
    answer(record) {
      const next = queue.shift() ?? fallback;
      if (next === undefined) return { ok: false, error: `${fake}: no scripted reply for request #${record.index}` };
      try {
        return { ok: true, answer: typeof next === "function" ? (next as (request: R) => A)(record) : next };
      } catch (error) {
        return { ok: false, error: `${fake}: responder threw: ${String(error)}` };
      }
    },
    controls: {
      requests,
      script: (...answers) => {
        queue.push(...answers);
      },
      respondWith: (responder) => {
        fallback = responder;
      },
      pendingReplies: () => queue.length,
      waitForRequest: (index, timeoutMs = 5000) => waitFor(`request #${index}`, timeoutMs, () => requests[index]),
      waitForOutcome: (index, timeoutMs = 5000) =>
        waitFor(`the end of request #${index}`, timeoutMs, () => {
          const outcome = requests[index]?.outcome;
          return outcome === undefined || outcome === "pending" ? undefined : outcome;
        }),
      reset: () => {
        queue.length = 0;
        requests.length = 0;
        fallback = undefined;
      },
    },
  };
}
