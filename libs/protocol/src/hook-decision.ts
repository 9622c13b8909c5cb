// Remote hooks beyond the tool-call hooks (change 53): their names, the servers that answer them, and
// the key under which the session's fold keeps a server's recorded decision.
import { z } from "zod";

/** The hooks a named hook server may serve, each recorded on the log when its answer changed anything. */
export const RemoteHookName = z.enum([
  "transform_context",
  "convert_to_llm",
  "on_payload",
  "should_stop_after_turn",
  "prepare_next_turn",
]);
export type RemoteHookName = z.infer<typeof RemoteHookName>;

/** A hook server's name: one subject token (`fleet.hook.<hook>.<server>`). */
export const HOOK_SERVER_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const HookServerName = z.string().regex(HOOK_SERVER_PATTERN);

/** SHA-256 of the canonical JSON of a hook request's `input`, lower-case hex. */
export const HookInputHash = z.string().regex(/^[0-9a-f]{64}$/);

/** The fold's key of one server's decision on one input of one hook. */
export const hookDecisionKey = (hook: RemoteHookName, server: string, inputHash: string): string =>
  `${hook} ${server} ${inputHash}`;
