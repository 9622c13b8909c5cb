// Shared by the schedule tests: who holds the scheduler lease, a schedule's history in stream order,
// and the sessions a schedule's fires made.
import { KV_BUCKETS, type ScheduleEvent } from "@fleet/protocol";
import { LeaseValue, readScheduleLog } from "@fleet/runtime";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";

/** The worker holding `loop.scheduler`, or undefined. */
export async function schedulerHolder(nc: NatsConnection): Promise<string | undefined> {
  const kv = await new Kvm(nc).open(KV_BUCKETS.leases.name);
  const entry = await kv.get("loop.scheduler").catch(() => null);
  if (entry?.operation !== "PUT") return undefined;
  const v = LeaseValue.safeParse(entry.json());
  return v.success ? v.data.workerId : undefined;
}

/** The schedule's events, oldest first. */
export async function scheduleEvents(nc: NatsConnection, scheduleId: string): Promise<ScheduleEvent[]> {
  const jsm = await jetstreamManager(nc);
  return (await readScheduleLog(jsm, scheduleId)).records.map((r) => r.event);
}

/** The slot outcomes of a schedule's log, as `[type, slot ms, trigger?]`. */
export const outcomes = (events: ScheduleEvent[]) =>
  events.flatMap((e) => ("slot" in e ? [{ type: e.type, at: e.slot.at, trigger: e.slot.trigger, event: e }] : []));

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}
