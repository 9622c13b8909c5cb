// The lifecycle records of a session on `fleet.evt.lifecycle.<sessionId>` (the auditor's).
import { decoderFor, LifecycleRecord, lifecycleStreamName, subjects } from "@fleet/protocol";
import type { StreamPublisher } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";

const decodeRecord = decoderFor(LifecycleRecord);
const encoder = new TextEncoder();

/** The session's last lifecycle record, or null when it has none (or it does not decode). */
export async function lastLifecycleRecord(
  jsm: JetStreamManager,
  sessionId: string,
  groups = 1,
): Promise<LifecycleRecord | null> {
  const msg = await jsm.direct.getMessage(lifecycleStreamName(groups), { last_by_subj: subjects.lifecycle(sessionId) });
  if (!msg) return null;
  const decoded = decodeRecord(msg.data);
  return decoded.ok ? decoded.value : null;
}

/**
 * Appends a lifecycle record (msgID `lifecycle.<commandId>.<type>`: a retried publish is stored
 * once). Throws when it could not be stored.
 */
export async function publishLifecycleRecord(
  publisher: StreamPublisher,
  record: LifecycleRecord,
  groups = 1,
): Promise<number> {
  const ack = await publisher.publishDurably(
    subjects.lifecycle(record.sessionId),
    encoder.encode(JSON.stringify(record)),
    {
      stream: lifecycleStreamName(groups),
      msgID: `lifecycle.${record.commandId}.${record.type}`,
      timeoutMs: 5_000,
    },
  );
  if (!ack.ok) throw new Error(`lifecycle record of ${record.sessionId} not stored: ${ack.error}`);
  return ack.seq;
}
