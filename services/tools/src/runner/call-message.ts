import type { JsMsg } from "@nats-io/jetstream";
import type { Logger } from "pino";

/**
 * Acks a call's message and waits for the server to confirm. Contract: never rejects; a lost or
 * unconfirmed ack only means a redelivery, and that finds the call's result.
 */
export async function ackSafely(m: JsMsg, log: Pick<Logger, "warn">): Promise<void> {
  try {
    if (!(await m.ackAck()))
      log.warn({ evt: "ack_unconfirmed" }, "ack not confirmed; a redelivery will find the result");
  } catch (err) {
    log.warn({ evt: "ack_failed", err }, "ack failed; a redelivery will find the result");
  }
}

/** Hands a message back to the queue after `delayMs`. Contract: never throws; when the connection is gone ack_wait redelivers it. */
export function nakSafely(m: JsMsg, delayMs?: number): void {
  try {
    m.nak(delayMs);
  } catch {
    // Connection gone: ack wait redelivers it.
  }
}

/**
 * Marks the call's current message in progress every `intervalMs` (it reads `call.msg` each time,
 * so a redelivery that replaced it is the one extended). Returns the function that stops it.
 */
export function keepWorking(call: { readonly msg: JsMsg }, intervalMs: number): () => void {
  const timer = setInterval(() => call.msg.working(), intervalMs);
  return () => clearInterval(timer);
}
