import { parseToolCancelSubject, subjects, toolCallMsgId } from "@fleet/protocol";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { createCancelMemory } from "./cancel-memory.js";

/** Listens on every call's cancel subject and aborts the call if this runner runs it. */
export interface CancelListener {
  /** Subscribes; once it resolves the server knows the subscription, so no later cancel is missed. */
  start(): Promise<void>;
  stop(): void;
  isListening(): boolean;
  /** Whether the call with `key` was cancelled before it arrived here (answers once). */
  cancelledEarly(key: string): boolean;
}

export function createCancelListener(opts: {
  nc: NatsConnection;
  /** The abort controller of the call with `key` when this runner runs it. */
  running: (key: string) => AbortController | undefined;
  now: () => number;
  logger: Pick<Logger, "info">;
}): CancelListener {
  const early = createCancelMemory(opts.now);
  let sub: Subscription | undefined;

  function onCancel(subject: string) {
    const parsed = parseToolCancelSubject(subject);
    if (!parsed) return;
    const key = toolCallMsgId(parsed.sessionId, parsed.toolCallId);
    const controller = opts.running(key);
    if (!controller) {
      early.remember(key);
      return;
    }
    opts.logger.info({ evt: "tool_call_cancel", sessionId: parsed.sessionId, toolCallId: parsed.toolCallId }, "cancel");
    controller.abort("cancel");
  }

  return {
    async start() {
      sub = opts.nc.subscribe(subjects.toolCancelsAll, { callback: (_err, msg) => onCancel(msg.subject) });
      await opts.nc.flush();
    },
    stop: () => sub?.unsubscribe(),
    isListening: () => sub !== undefined,
    cancelledEarly: (key) => early.take(key),
  };
}
