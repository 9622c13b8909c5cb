// The nominal times of a schedule's spec: croner for cron expressions in a time zone, arithmetic for
// intervals. Pure: time comes in and goes out as epoch milliseconds.
import { Cron } from "croner";
import type { ScheduleDefinition, ScheduleSpec } from "./schedule-schemas.js";

export type SpecCheck = { ok: true } | { ok: false; error: string };

/** Whether a spec can produce times: the cron expression parses and the time zone exists. */
export function checkScheduleSpec(spec: ScheduleSpec): SpecCheck {
  if (spec.kind !== "cron") return { ok: true };
  try {
    new Cron(spec.cron, { timezone: spec.timezone ?? "UTC", paused: true }).nextRun(new Date(0));
    return { ok: true };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

/**
 * The first nominal time strictly after `afterMs` within the definition's start and end, or
 * `undefined` when there is none. `createdAt` anchors an `every` spec without `anchor`.
 */
export function nextSlotAfter(
  def: Pick<ScheduleDefinition, "spec" | "startAt" | "endAt">,
  createdAt: number,
  afterMs: number,
): number | undefined {
  const from = def.startAt !== undefined ? Math.max(afterMs, def.startAt - 1) : afterMs;
  const next = nextOfSpec(def.spec, createdAt, from);
  if (next === undefined || (def.endAt !== undefined && next > def.endAt)) return undefined;
  return next;
}

/** Up to `n` nominal times strictly after `afterMs`. */
export function nextSlots(
  def: Pick<ScheduleDefinition, "spec" | "startAt" | "endAt">,
  createdAt: number,
  afterMs: number,
  n: number,
): number[] {
  const out: number[] = [];
  let cursor = afterMs;
  while (out.length < n) {
    const next = nextSlotAfter(def, createdAt, cursor);
    if (next === undefined) break;
    out.push(next);
    cursor = next;
  }
  return out;
}

function nextOfSpec(spec: ScheduleSpec, createdAt: number, afterMs: number): number | undefined {
  switch (spec.kind) {
    case "at":
      return spec.at > afterMs ? spec.at : undefined;
    case "every": {
      const anchor = spec.anchor ?? createdAt;
      if (afterMs < anchor) return anchor;
      return anchor + (Math.floor((afterMs - anchor) / spec.everyMs) + 1) * spec.everyMs;
    }
    case "cron": {
      const cron = new Cron(spec.cron, { timezone: spec.timezone ?? "UTC", paused: true });
      return cron.nextRun(new Date(afterMs))?.getTime();
    }
  }
}
