// Waiting for a session's lifecycle record (deleted, archived, restored) of one command.
import { decoderFor, LifecycleRecord, lifecycleStreamName, subjects } from "@fleet/protocol";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

const decodeRecord = decoderFor(LifecycleRecord);

/** The session's last lifecycle record, or null when it has none. */
export async function readLifecycleRecord(
  jsm: JetStreamManager,
  sessionId: string,
  groups: number,
): Promise<LifecycleRecord | null> {
  const msg = await jsm.direct.getMessage(lifecycleStreamName(groups), { last_by_subj: subjects.lifecycle(sessionId) });
  if (!msg) return null;
  const decoded = decodeRecord(msg.data);
  return decoded.ok ? decoded.value : null;
}

/**
 * Listens for the lifecycle record of `commandId` (live, on the record's subject) from now on.
 * `record` resolves with it, or with `null` once `signal` aborts; `close` stops listening.
 */
export function watchLifecycleRecord(
  nc: NatsConnection,
  sessionId: string,
  commandId: string,
  signal: AbortSignal,
): { record: Promise<LifecycleRecord | null>; close(): void } {
  const sub = nc.subscribe(subjects.lifecycle(sessionId));
  const close = () => sub.unsubscribe();
  signal.addEventListener("abort", close, { once: true });
  const record = (async () => {
    for await (const msg of sub) {
      const decoded = decodeRecord(msg.data);
      if (decoded.ok && decoded.value.commandId === commandId) {
        close();
        return decoded.value;
      }
    }
    return null;
  })();
  return { record, close };
}
