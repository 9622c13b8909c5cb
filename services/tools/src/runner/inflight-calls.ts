import type { JsMsg } from "@nats-io/jetstream";
import type { AbortCause } from "./execute-call.js";

/** A call this runner is serving, keyed by `toolCallMsgId(sessionId, toolCallId)`. */
export interface InflightCall {
  /** The latest delivery of the call's message (redeliveries replace it). */
  msg: JsMsg;
  /** Stream sequence of the message being served. */
  readonly seq: number;
  /** Aborted with an `AbortCause` (a cancel, or the runner's shutdown). */
  readonly controller: AbortController;
  /** Resolves when this runner is done with the call, whatever the outcome. */
  readonly done: Promise<void>;
}

/** The calls this runner serves right now: at most one per call key. */
export interface InflightCalls {
  get(key: string): InflightCall | undefined;
  /** Registers the call served from `msg`. */
  begin(key: string, msg: JsMsg): InflightCall;
  /** Forgets the call and resolves its `done`. */
  end(key: string): void;
  size(): number;
  abortAll(cause: AbortCause): void;
}

export function createInflightCalls(): InflightCalls {
  const calls = new Map<string, InflightCall & { finish: () => void }>();
  return {
    get: (key) => calls.get(key),
    begin(key, msg) {
      let finish!: () => void;
      const done = new Promise<void>((resolve) => {
        finish = resolve;
      });
      const call = { msg, seq: msg.seq, controller: new AbortController(), done, finish };
      calls.set(key, call);
      return call;
    },
    end(key) {
      const call = calls.get(key);
      calls.delete(key);
      call?.finish();
    },
    size: () => calls.size,
    abortAll(cause) {
      for (const call of calls.values()) call.controller.abort(cause);
    },
  };
}
