import { toolErrorText } from "@fleet/protocol";
import type { CallState } from "./call-state.js";

/** What a runner knows when a delivery of a call arrives; time is an input. */
export interface ClaimInput {
  state: CallState;
  /** This runner's id. */
  runnerId: string;
  toolName: string;
  retry: "safe" | "never";
  /**
   * When the presence key of the runner named in a `running` state was last written (epoch ms), or
   * undefined when it has none (expired, deleted, or never announced).
   */
  ownerSeenAt: number | undefined;
  /** The presence TTL: a runner whose key was not rewritten for this long is gone. */
  presenceTtlMs: number;
  /** Upper bound of a `busy` delay, so a live owner is looked at again at least this often. */
  busyRetryMs: number;
  now: number;
}

/**
 * The claim decision for one delivery of a call:
 * - `duplicate`: a result exists; ack, never run again;
 * - `busy`: another live runner runs it; nak with `delayMs` (until its presence would expire);
 * - `fail`: a gone runner started a `retry: never` call; write `text` as the error result
 *   (expecting `expectLastSeq`) and ack;
 * - `claim`: write `started` expecting `expectLastSeq`, then run; `rerunOf` names the gone runner
 *   whose run is replaced (`retry: safe`).
 */
export type ClaimDecision =
  | { kind: "duplicate" }
  | { kind: "busy"; owner: string; delayMs: number }
  | { kind: "fail"; text: string; expectLastSeq: number; previousRunner: string | undefined }
  | { kind: "claim"; expectLastSeq: number; rerunOf?: string | undefined };

/** Whether a runner whose presence was last written at `seenAt` is live at `now`. */
export const presenceLive = (seenAt: number | undefined, ttlMs: number, now: number): boolean =>
  seenAt !== undefined && now - seenAt < ttlMs;

export function decideClaim(input: ClaimInput): ClaimDecision {
  const { state } = input;
  if (state.kind === "result") return { kind: "duplicate" };
  if (state.kind === "none") return { kind: "claim", expectLastSeq: 0 };
  const owner = state.kind === "running" ? state.runnerId : undefined;
  if (
    owner !== undefined &&
    owner !== input.runnerId &&
    presenceLive(input.ownerSeenAt, input.presenceTtlMs, input.now)
  ) {
    const untilExpiry = (input.ownerSeenAt as number) + input.presenceTtlMs - input.now + 50;
    return { kind: "busy", owner, delayMs: Math.max(50, Math.min(input.busyRetryMs, untilExpiry)) };
  }
  if (input.retry === "never") {
    return {
      kind: "fail",
      text: toolErrorText.runnerLost(input.toolName),
      expectLastSeq: state.seq,
      previousRunner: owner,
    };
  }
  return { kind: "claim", expectLastSeq: state.seq, rerunOf: owner };
}

/**
 * The first look at a delivery, before any I/O:
 * - `invalid`: unreadable, or published on another tool's subject; answer `error` (only if nothing
 *   was written for the call yet) and ack;
 * - `keep_working`: this runner runs that very message (ack_wait passed); keep it with the new delivery;
 * - `after_running`: another copy of a call this runner runs; ack it as a duplicate once that run ends;
 * - `new`: go on to the claim decision.
 */
export type DeliveryDecision =
  | { kind: "invalid"; error: string }
  | { kind: "keep_working" }
  | { kind: "after_running" }
  | { kind: "new" };

export function decideDelivery(input: {
  decoded: { ok: true; value: { toolName: string } } | { ok: false; error: string };
  /** The tool whose consumer delivered it. */
  toolName: string;
  /** Stream sequence of the message this runner runs for the same call, if any. */
  runningSeq: number | undefined;
  seq: number;
}): DeliveryDecision {
  const { decoded } = input;
  if (!decoded.ok) return { kind: "invalid", error: decoded.error };
  if (decoded.value.toolName !== input.toolName) {
    return {
      kind: "invalid",
      error: `toolName ${JSON.stringify(decoded.value.toolName)} was published on the subject of tool ${JSON.stringify(input.toolName)}`,
    };
  }
  if (input.runningSeq === undefined) return { kind: "new" };
  return input.runningSeq === input.seq ? { kind: "keep_working" } : { kind: "after_running" };
}
