// What every part of FleetClient works with: the connection, JetStream, P, K and the blob access.
import { eventStreamOfPartition, lifecycleStreamName, partitionOf, subjects } from "@fleet/protocol";
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
  /** K, the number of event streams (stream groups). */
  readonly groups: number;
  /** The event streams that republish stored events on `fleet.live.>` (change 67), read at connect. */
  readonly liveStreams: ReadonlySet<string>;
  readonly blobs: BlobAccess;
}

/** The stream holding the session's events: `FLEET_EVENTS` with K = 1, else its group's. */
export function eventStreamOf(ctx: ClientContext, sessionId: string): string {
  return eventStreamOfPartition(partitionOf(sessionId, ctx.partitions), ctx.groups);
}

/** The stream holding every session's lifecycle records (group 0's). */
export const lifecycleStreamOf = (ctx: ClientContext): string => lifecycleStreamName(ctx.groups);

/** The session's event subject, `fleet.evt.<p>.<sessionId>`. */
export function eventSubjectOf(ctx: ClientContext, sessionId: string): string {
  return subjects.event(partitionOf(sessionId, ctx.partitions), sessionId);
}

/** Stream sequence of the session's last event, 0 when it has none; `unavailable` when it cannot be read. */
export async function lastEventSeq(ctx: ClientContext, sessionId: string): Promise<number> {
  try {
    return await lastSubjectSeq(ctx.jsm, eventStreamOf(ctx, sessionId), eventSubjectOf(ctx, sessionId));
  } catch (err) {
    throw streamUnavailable(err);
  }
}

/** `unavailable`/`stream`: the event log could not be read. */
export function streamUnavailable(err: unknown): FleetError {
  return new FleetError("unavailable", "stream", `cannot read the event log (${describeError(err)})`, {
    cause: err,
  });
}
