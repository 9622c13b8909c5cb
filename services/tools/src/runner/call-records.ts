import {
  encodeToolResultRecord,
  STREAMS,
  subjects,
  type ToolFinalRecord,
  type ToolResultRecord,
  toolCallMsgId,
} from "@fleet/protocol";
import { WRONG_LAST_SEQUENCE } from "@fleet/runtime";
import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";

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

/**
 * Publishes records to `fleet.tool.result.<sid>.<toolCallId>`. `expectLastSeq` turns the publish
 * into a claim: it fails with 10071 when anything else was written to the subject since.
 */
export async function publishRecord(
  js: JetStreamClient,
  runnerId: string,
  call: CallId,
  record: ToolResultRecord,
  opts: { msgID?: string; expectLastSeq?: number } = {},
): Promise<PubAck> {
  const encoded = encodeToolResultRecord(record);
  if (!encoded.ok) throw new Error(`cannot encode ${record.kind} record: ${encoded.error}`);
  const h = headers();
  h.set(RUNNER_ID_HEADER, runnerId);
  return js.publish(subjects.toolResult(call.sessionId, call.toolCallId), encoded.bytes, {
    headers: h,
    ...(opts.msgID ? { msgID: opts.msgID } : {}),
    ...(opts.expectLastSeq !== undefined
      ? { expect: { lastSubjectSequence: opts.expectLastSeq, streamName: STREAMS.toolResults.name } }
      : {}),
  });
}

export const errorRecord = (text: string, details: unknown = {}): ToolFinalRecord => ({
  kind: "result",
  content: [{ type: "text", text }],
  details,
  isError: true,
});
