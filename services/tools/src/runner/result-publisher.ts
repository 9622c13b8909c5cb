import { setTimeout as sleep } from "node:timers/promises";
import type { ToolFinalRecord } from "@fleet/protocol";
import type { StreamPublisher } from "@fleet/runtime";
import type { Logger } from "pino";
import { type CallId, errorRecord, finalMsgId, publishRecord } from "./call-records.js";
import { decideResultRetry } from "./result-retry.js";

/**
 * Writes a runner's records of a call to `fleet.tool.result.<sid>.<toolCallId>`, each with the
 * runner's id header. Final records carry msgID `<sid>.<toolCallId>.result`, so a second one is dropped.
 * Contract: every method rejects on NATS errors (10071 when an expected sequence no longer holds).
 */
export interface ResultPublisher {
  /** The claim: a `started` record, expecting `expectLastSeq` as the subject's last sequence. */
  started(call: CallId, expectLastSeq: number): Promise<void>;
  /** An error result with `text`, expecting `expectLastSeq` (0: only if nothing was written yet). */
  failed(call: CallId, text: string, expectLastSeq: number): Promise<void>;
  /** A progress record. */
  update(call: CallId, partialResult: unknown): Promise<void>;
  /** The final record, retried as `decideResultRetry` says. */
  final(call: CallId, record: ToolFinalRecord, log: Pick<Logger, "warn">): Promise<void>;
}

export function createResultPublisher(opts: {
  /** The runner's stream publisher (closed by the runner, not here). */
  publisher: StreamPublisher;
  runnerId: string;
  now: () => number;
  /** True once the runner is past its shutdown grace: failed final records are not retried then. */
  hardStopped: () => boolean;
}): ResultPublisher {
  const { publisher, runnerId } = opts;
  return {
    async started(call, expectLastSeq) {
      await publishRecord(publisher, runnerId, call, { kind: "started", runnerId, ts: opts.now() }, { expectLastSeq });
    },
    async failed(call, text, expectLastSeq) {
      await publishRecord(publisher, runnerId, call, errorRecord(text), { msgID: finalMsgId(call), expectLastSeq });
    },
    async update(call, partialResult) {
      await publishRecord(publisher, runnerId, call, { kind: "update", partialResult });
    },
    async final(call, record, log) {
      for (let attempt = 0; ; attempt++) {
        try {
          await publishRecord(publisher, runnerId, call, record, { msgID: finalMsgId(call) });
          return;
        } catch (err) {
          const next = decideResultRetry(attempt, opts.hardStopped());
          if (!next.retry) throw err;
          log.warn({ evt: "result_publish_retry", attempt, err }, "publishing the result failed; retrying");
          await sleep(next.delayMs);
        }
      }
    },
  };
}
