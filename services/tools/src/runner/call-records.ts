import {
  encodeToolResultRecord,
  STREAMS,
  subjects,
  type ToolFinalRecord,
  type ToolResultRecord,
  toolCallMsgId,
} from "@fleet/protocol";
import { type StreamPublisher, WRONG_LAST_SEQUENCE } from "@fleet/runtime";

/** Header on every record a runner writes: which runner wrote it (runner-lost detection reads it). */
export const RUNNER_ID_HEADER = "Fleet-Runner-Id";

export const isWrongLastSequence = (err: unknown) =>
  (err as { code?: unknown } | undefined)?.code === WRONG_LAST_SEQUENCE ||
  /wrong last sequence/i.test((err as Error | undefined)?.message ?? "");

export interface CallId {
  sessionId: string;
  toolCallId: string;
}

export const finalMsgId = (call: CallId) => `${toolCallMsgId(call.sessionId, call.toolCallId)}.result`;

/** A record the stream did not store: `code` is the publisher's (10071 when the expected sequence no longer held). */
export class RecordNotStored extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.name = "RecordNotStored";
    this.code = code;
  }
}

/**
 * Publishes records to `fleet.tool.result.<sid>.<toolCallId>` through the runner's stream publisher
 * (one inbox for every ack, no request object per record). `expectLastSeq` turns the publish into a
 * claim: it fails with 10071 when anything else was written to the subject since. Rejects with
 * `RecordNotStored` when the record was not stored (or its ack did not come in time).
 */
export async function publishRecord(
  publisher: StreamPublisher,
  runnerId: string,
  call: CallId,
  record: ToolResultRecord,
  opts: { msgID?: string; expectLastSeq?: number } = {},
): Promise<{ seq: number; duplicate: boolean }> {
  const encoded = encodeToolResultRecord(record);
  if (!encoded.ok) throw new Error(`cannot encode ${record.kind} record: ${encoded.error}`);
  const ack = await publisher.publish(subjects.toolResult(call.sessionId, call.toolCallId), encoded.bytes, {
    ...(opts.msgID ? { msgID: opts.msgID } : {}),
    ...(opts.expectLastSeq !== undefined ? { expectLastSubjectSequence: opts.expectLastSeq } : {}),
    headers:
      opts.expectLastSeq !== undefined
        ? { [RUNNER_ID_HEADER]: runnerId, "Nats-Expected-Stream": STREAMS.toolResults.name }
        : { [RUNNER_ID_HEADER]: runnerId },
  });
  if (!ack.ok) throw new RecordNotStored(ack.code, ack.error);
  return { seq: ack.seq, duplicate: ack.duplicate };
}

export const errorRecord = (text: string, details: unknown = {}): ToolFinalRecord => ({
  kind: "result",
  content: [{ type: "text", text }],
  details,
  isError: true,
});
