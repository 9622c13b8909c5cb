// What every part of FleetClient works with: the connection, JetStream, P and the blob access.
import { partitionOf, STREAMS, subjects } from "@fleet/protocol";
import { type BlobAccess, lastSubjectSeq } from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { FleetError } from "./errors.js";
import { describeError } from "./nats-failures.js";

/** One open client: shared, read-only, by the command, read and query parts. */
export interface ClientContext {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** P, the partition count. */
  readonly partitions: number;
  readonly blobs: BlobAccess;
}

/** The session's event subject, `fleet.evt.<p>.<sessionId>`. */
export function eventSubjectOf(ctx: ClientContext, sessionId: string): string {
  return subjects.event(partitionOf(sessionId, ctx.partitions), sessionId);
}

/** Stream sequence of the session's last event, 0 when it has none; `unavailable` when it cannot be read. */
export async function lastEventSeq(ctx: ClientContext, sessionId: string): Promise<number> {
  try {
    return await lastSubjectSeq(ctx.jsm, STREAMS.events.name, eventSubjectOf(ctx, sessionId));
  } catch (err) {
    throw streamUnavailable(err);
  }
}

/** `unavailable`/`stream`: FLEET_EVENTS could not be read. */
export function streamUnavailable(err: unknown): FleetError {
  return new FleetError("unavailable", "stream", `cannot read ${STREAMS.events.name} (${describeError(err)})`, {
    cause: err,
  });
}
