import type { Logger } from "pino";
import { type CallId, isWrongLastSequence } from "./call-records.js";
import type { CallState } from "./call-state.js";
import { type ClaimDecision, decideClaim } from "./claim-decision.js";
import type { ResultPublisher } from "./result-publisher.js";

/** Conflicting writes (10071) after which a claim gives up and the delivery goes back to the queue. */
const MAX_CLAIM_CONFLICTS = 3;

export interface ClaimCallDeps {
  runnerId: string;
  readState: (call: CallId) => Promise<CallState>;
  /** When a runner's presence was last written (epoch ms), undefined when it has none. */
  seenAt: (runnerId: string) => Promise<number | undefined>;
  presenceTtlMs: number;
  busyRetryMs: number;
  publisher: Pick<ResultPublisher, "started" | "failed">;
  now: () => number;
}

/**
 * Claims a call on its result subject: applies `decideClaim` and writes what it decided (`started`
 * for `claim`, the runner-lost error for `fail`) expecting the subject's last sequence. The first
 * attempt assumes nothing was written (sequence 0); on a conflict the real state is read and decided
 * again. Resolves the decision that was carried out; rejects on NATS errors or repeated conflicts.
 */
export async function claimCall(
  input: ClaimCallDeps,
  call: CallId,
  tool: { name: string; retry: "safe" | "never" },
  log: Pick<Logger, "info" | "warn">,
): Promise<ClaimDecision> {
  let state: CallState = { kind: "none", seq: 0 };
  for (let attempt = 0; ; attempt++) {
    const owner = state.kind === "running" ? state.runnerId : undefined;
    const decision = decideClaim({
      state,
      runnerId: input.runnerId,
      toolName: tool.name,
      retry: tool.retry,
      ownerSeenAt: owner && owner !== input.runnerId ? await input.seenAt(owner) : undefined,
      presenceTtlMs: input.presenceTtlMs,
      busyRetryMs: input.busyRetryMs,
      now: input.now(),
    });
    try {
      switch (decision.kind) {
        case "duplicate":
          log.info({ evt: "tool_call_duplicate" }, "call already has a result; not run again");
          break;
        case "busy":
          log.info({ evt: "tool_call_busy", owner: decision.owner }, "call is running on another live runner");
          break;
        case "fail":
          await input.publisher.failed(call, decision.text, decision.expectLastSeq);
          log.warn(
            { evt: "tool_runner_lost", previousRunner: decision.previousRunner },
            "runner lost while executing; error result given",
          );
          break;
        case "claim":
          if (decision.expectLastSeq > 0) {
            log.warn(
              { evt: "tool_call_rerun", previousRunner: decision.rerunOf },
              "re-running a call whose runner is gone (retry: safe)",
            );
          }
          await input.publisher.started(call, decision.expectLastSeq);
      }
      return decision;
    } catch (err) {
      if (!isWrongLastSequence(err) || attempt >= MAX_CLAIM_CONFLICTS) throw err;
      state = await input.readState(call);
    }
  }
}
