// The open-work index of the partitions (PROTOCOL change 41) on stream FLEET_OPEN_WORK.
import { parseOpenWorkSubject, STREAMS, subjects } from "@fleet/protocol";
import type { PublishFailure, StreamPublisher } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";

const encoder = new TextEncoder();

export interface OpenWorkIndex {
  /**
   * Writes the session's entry (replacing any: one message per subject). Retried through passing
   * failures while `keepTrying` says so; throws when it was not stored.
   */
  mark(
    partition: number,
    sessionId: string,
    keepTrying: (f: PublishFailure) => boolean | Promise<boolean>,
  ): Promise<void>;
  /** Removes the session's entry (a purge of its subject: nothing is left behind). Throws on failure. */
  unmark(partition: number, sessionId: string): Promise<void>;
  /** The sessions listed for `partition`: one request, its cost in proportion to the partition's entries. */
  list(partition: number): Promise<string[]>;
  /** Whether a holder has scanned the partition's whole log into the index (sessions from before it). */
  scanned(partition: number): Promise<boolean>;
  /** Records that the partition's whole log was scanned (written once, after the scan finished). */
  noteScanned(partition: number): Promise<void>;
}

/**
 * An open-work entry JetStream did not store (no room, no acknowledgement in time, no stream):
 * nothing that needed it was appended, so the command that needed it can be decided again later.
 */
export class OpenWorkNotStoredError extends Error {
  constructor(subject: string, reason: string) {
    super(`open-work entry ${subject} not stored: ${reason}`);
    this.name = "OpenWorkNotStoredError";
  }
}

export function createOpenWorkIndex(opts: {
  publisher: StreamPublisher;
  jsm: JetStreamManager;
  workerId: string;
  now: () => number;
}): OpenWorkIndex {
  const stream = STREAMS.openWork.name;
  const body = () => encoder.encode(JSON.stringify({ workerId: opts.workerId, ts: opts.now() }));
  const store = async (subject: string, keepTrying?: (f: PublishFailure) => boolean | Promise<boolean>) => {
    // No msgID: an entry written again after its purge must be stored again.
    const ack = await opts.publisher.publishDurably(subject, body(), {
      stream,
      timeoutMs: 5_000,
      ...(keepTrying ? { keepTrying } : {}),
    });
    if (!ack.ok) throw new OpenWorkNotStoredError(subject, ack.error);
  };
  return {
    mark: (partition, sessionId, keepTrying) => store(subjects.openWork(partition, sessionId), keepTrying),
    async unmark(partition, sessionId) {
      await opts.jsm.streams.purge(stream, { filter: subjects.openWork(partition, sessionId) });
    },
    async list(partition) {
      const info = await opts.jsm.streams.info(stream, { subjects_filter: subjects.openWorkOfPartition(partition) });
      const out: string[] = [];
      for (const subject of Object.keys((info.state.subjects ?? {}) as Record<string, number>)) {
        const parsed = parseOpenWorkSubject(subject);
        if (parsed?.partition === partition) out.push(parsed.sessionId);
      }
      return out;
    },
    async scanned(partition) {
      const msg = await opts.jsm.direct.getMessage(stream, { last_by_subj: subjects.openWorkScanned(partition) });
      return msg !== null && msg !== undefined;
    },
    noteScanned: (partition) => store(subjects.openWorkScanned(partition)),
  };
}
