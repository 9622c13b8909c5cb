// Named hook servers' decisions (change 53), pure: what the shell does for one server on one input,
// given the session's fold, and what it records when the answer changed something.
import { createHash } from "node:crypto";
import {
  type BlobRef,
  type EventDraft,
  type HookDecisionRecord,
  hookDecisionKey,
  type RemoteHookName,
  type SessionState,
} from "@fleet/protocol";

/** An output up to this many bytes (its JSON) goes inline in `hook_decision`; a larger one to `fleet_blobs`. */
export const HOOK_OUTPUT_INLINE_BYTES = 64 * 1024;

/** JSON with object keys sorted at every level, so equal values give equal text (and hash). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

/** `inputHash` of a request: SHA-256 (hex) of the canonical JSON of the hook's name and its `input`. */
export function hookInputHash(hook: RemoteHookName, input: unknown): string {
  return createHash("sha256").update(canonicalJson({ hook, input })).digest("hex");
}

/** What to do before asking one server: use a decision the log holds, or ask. */
export type HookLookup = { kind: "recorded"; record: HookDecisionRecord } | { kind: "ask" };

export function lookupHookDecision(
  state: SessionState,
  hook: RemoteHookName,
  server: string,
  inputHash: string,
): HookLookup {
  const record = state.hookDecisions.get(hookDecisionKey(hook, server, inputHash));
  return record ? { kind: "recorded", record } : { kind: "ask" };
}

/** A server's answer: not installed (no responders), an output (absent: no change), or a failure. */
export type HookAnswer =
  | { kind: "none" }
  | { kind: "reply"; output: Record<string, unknown> | undefined }
  | { kind: "failed"; reason: string };

/**
 * What an answer does. The output's fields replace the input's fields of the same name; it changed
 * something when one of them differs (canonical JSON). A changed answer is recorded: inline when its
 * JSON is at most `HOOK_OUTPUT_INLINE_BYTES`, else by reference (`json` is what the shell stores).
 * A failure (timeout, error, invalid reply) fails closed: the shell ends the run with `reason`.
 */
export type HookOutcome =
  | { kind: "unchanged" }
  | { kind: "changed"; output: Record<string, unknown>; json: string; inline: boolean }
  | { kind: "fail"; reason: string };

export function decideHookAnswer(input: Record<string, unknown>, answer: HookAnswer): HookOutcome {
  if (answer.kind === "failed") return { kind: "fail", reason: answer.reason };
  if (answer.kind === "none" || answer.output === undefined) return { kind: "unchanged" };
  const output = answer.output;
  const changed = Object.keys(output).some((k) => canonicalJson(output[k]) !== canonicalJson(input[k]));
  if (!changed) return { kind: "unchanged" };
  const json = JSON.stringify(output);
  return { kind: "changed", output, json, inline: Buffer.byteLength(json) <= HOOK_OUTPUT_INLINE_BYTES };
}

/** The `hook_decision` body of a changed answer (`outputRef` when it was stored by reference). */
export function hookDecisionBody(args: {
  hook: RemoteHookName;
  server: string;
  inputHash: string;
  turn: number;
  output: Record<string, unknown>;
  outputRef?: BlobRef;
}): EventDraft {
  const { hook, server, inputHash, turn, output, outputRef } = args;
  return outputRef
    ? { type: "hook_decision", hook, server, inputHash, turn, outputRef }
    : { type: "hook_decision", hook, server, inputHash, turn, output };
}

/** Where a session's decisions stored by reference are in `fleet_blobs` (removed with the session). */
export const hookOutputPrefix = (sessionId: string) => `hooks/${sessionId}/`;

/** The `fleet_blobs` object name of a decision stored by reference. */
export const hookOutputObjectName = (sessionId: string, hook: RemoteHookName, server: string, inputHash: string) =>
  `${hookOutputPrefix(sessionId)}${hook}/${server}/${inputHash}`;
