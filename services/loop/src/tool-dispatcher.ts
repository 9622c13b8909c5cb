import {
  decodeToolResultRecord,
  encodeToolCallRequest,
  STREAMS,
  subjects,
  type ToolFinalRecord,
  toolCallMsgId,
  toolErrorText,
} from "@fleet/protocol";
import type { StreamPublisher } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";

export interface RemoteToolCall {
  sessionId: string;
  runId: string;
  toolCallId: string;
  toolName: string;
  args: unknown;
  timeoutMs: number;
  /**
   * The call's assistant message was appended by this worker's own run, so nobody can have
   * dispatched it before: the stored-result lookup is skipped. False for calls of a resumed run.
   */
  fresh?: boolean;
  /** W3C trace context of the call's `execute_tool` span, passed on to the runner (change 46). */
  traceparent?: string;
  tracestate?: string;
  /**
   * Starts the call instead of dispatching it to a runner (a sub-agent's commands, change 57):
   * resolves with an error text when it could not. No runner is looked for and no pickup time
   * applies; the result is awaited on the same subject, stored and live, as a runner's.
   */
  start?: () => Promise<string | undefined>;
  /**
   * Asked at each recheck that finds no stored result (a sub-agent's answer read from its log when
   * the record never arrived, change 71): a result it gives settles the call. Never rejects.
   */
  recover?: () => Promise<RemoteToolResult | undefined>;
}

export interface RemoteToolResult {
  content: ToolFinalRecord["content"];
  details?: unknown;
  isError: boolean;
  terminate?: boolean;
}

export interface ToolDispatcher {
  /**
   * Runs one call on the runners. Contract: never rejects. Dispatch is at most once per
   * `sessionId.toolCallId` within the call stream's dedup window, and a result already stored in
   * FLEET_TOOL_RESULTS is returned without re-dispatch (crash resume).
   */
  execute(
    call: RemoteToolCall,
    signal: AbortSignal,
    onUpdate: (partial: unknown) => void,
    /**
     * Aborted when this worker stops waiting (its actor was detached: lease lost, eviction,
     * shutdown). The call is left alone: no cancel is published, no timer of this call fires
     * later, and the result is the next owner's. The promise then settles with an error result.
     */
    detach?: AbortSignal,
  ): Promise<RemoteToolResult>;
  /** Stops following a session's results (its actor was dropped). Calls still waiting keep waiting. */
  forget(sessionId: string): void;
  close(): void;
}

/** How long a call's dispatch is retried through transient failures (at most the call's timeout). */
const DISPATCH_RETRY_MS = 30_000;

const errorResult = (text: string, details?: unknown): RemoteToolResult => ({
  content: [{ type: "text", text }],
  isError: true,
  ...(details !== undefined ? { details } : {}),
});

/**
 * While a call waits, its stored result is read this often: results arrive on a core-NATS
 * subscription, and one published while this worker's connection was moving to another node (a
 * cluster node killed) never reaches it (seen: a run waited 87 s for a result stored in 1 s).
 */
export const RESULT_RECHECK_MS = 5_000;

/** How long a call waits for a runner to claim it before it fails (see `pickupTimeoutMs`). */
export const DEFAULT_TOOL_PICKUP_MS = 30_000;

export function createToolDispatcher(opts: {
  nc: NatsConnection;
  /** Dispatches calls (msgID `sessionId.toolCallId`); errors are data. */
  publisher: StreamPublisher;
  jsm: JetStreamManager;
  now: () => number;
  /** How long to wait for the runner's own `Operation aborted` result after a cancel. */
  cancelGraceMs?: number;
  /**
   * A call that no runner has claimed (no `started` record) after this long fails with an error naming
   * the tool; a cancel is published so a runner that shows up later does not run it. Default 30 s.
   */
  pickupTimeoutMs?: number;
  /**
   * False when no live runner serves the tool: the call then fails at once, naming the tool, and is
   * not dispatched. Without it every call waits up to the pickup time.
   */
  runnerAvailable?: (toolName: string) => boolean;
  /**
   * Waits up to `ms` for a live runner of the tool when `runnerAvailable` says none: after a bus
   * outage runners announce themselves again within moments. Without it the call fails at once.
   */
  awaitRunner?: (toolName: string, ms: number) => Promise<boolean>;
  /** How long a call waits for a runner of its tool to (re)appear before failing. Default 0. */
  runnerGraceMs?: number;
  /** How often a waiting call's stored result is read. Default `RESULT_RECHECK_MS`. */
  resultRecheckMs?: number;
}): ToolDispatcher {
  const cancelGrace = opts.cancelGraceMs ?? 2_000;
  const pickupTimeout = opts.pickupTimeoutMs ?? DEFAULT_TOOL_PICKUP_MS;

  async function storedResult(sessionId: string, toolCallId: string): Promise<RemoteToolResult | null> {
    try {
      // Direct get (the results stream has allow_direct): records that landed before we subscribed.
      const msg = await opts.jsm.direct.getMessage(STREAMS.toolResults.name, {
        last_by_subj: subjects.toolResult(sessionId, toolCallId),
      });
      if (!msg) return null;
      const rec = decodeToolResultRecord(msg.data);
      return rec.ok && rec.value.kind === "result" ? fromFinal(rec.value) : null;
    } catch {
      return null;
    }
  }

  // One subscription per session on `fleet.tool.result.<sid>.*`, open while the session has calls
  // waiting; a record is routed to its call by the subject's last token. A SUB reaches the server
  // before the PUB of the call sent after it on the same connection, so no record can be missed.
  type Listener = (msg: Msg) => void;
  const sessions = new Map<string, { sub: Subscription; calls: Map<string, Listener>; forgotten: boolean }>();
  const unsubscribeIfDone = (sessionId: string) => {
    const entry = sessions.get(sessionId);
    if (!entry?.forgotten || entry.calls.size > 0) return;
    sessions.delete(sessionId);
    entry.sub.unsubscribe();
  };
  const follow = (sessionId: string, toolCallId: string, listener: Listener) => {
    let entry = sessions.get(sessionId);
    if (!entry) {
      const calls = new Map<string, Listener>();
      const sub = opts.nc.subscribe(subjects.toolResultsOfSession(sessionId), {
        callback: (err, msg) => {
          if (!err) calls.get(msg.subject.slice(msg.subject.lastIndexOf(".") + 1))?.(msg);
        },
      });
      entry = { sub, calls, forgotten: false };
      sessions.set(sessionId, entry);
    }
    entry.forgotten = false;
    entry.calls.set(toolCallId, listener);
    const calls = entry.calls;
    return () => {
      if (calls.get(toolCallId) === listener) calls.delete(toolCallId);
      unsubscribeIfDone(sessionId);
    };
  };

  return {
    forget(sessionId) {
      const entry = sessions.get(sessionId);
      if (entry) entry.forgotten = true;
      unsubscribeIfDone(sessionId);
    },
    close() {
      for (const { sub } of sessions.values()) sub.unsubscribe();
      sessions.clear();
    },
    async execute(call, signal, onUpdate, detach) {
      let settle!: (r: RemoteToolResult) => void;
      const settled = new Promise<RemoteToolResult>((resolve) => {
        settle = resolve;
      });
      let done = false;
      let picked = false;
      let backstop: NodeJS.Timeout | undefined;
      let onProgress: (() => void) | undefined;
      const finish = (r: RemoteToolResult) => {
        if (!done) {
          done = true;
          settle(r);
        }
      };
      const unfollow = follow(call.sessionId, call.toolCallId, (msg) => {
        const rec = decodeToolResultRecord(msg.data);
        if (!rec.ok) return;
        picked = true;
        if (rec.value.kind === "update") {
          onProgress?.();
          onUpdate(rec.value.partialResult);
        } else if (rec.value.kind === "result") finish(fromFinal(rec.value));
      });
      const timers: NodeJS.Timeout[] = [];
      const cancel = () => opts.nc.publish(subjects.toolCancel(call.sessionId, call.toolCallId));
      const onAbort = () => {
        if (detach?.aborted) return;
        cancel();
        timers.push(setTimeout(() => finish(errorResult(toolErrorText.aborted)), cancelGrace));
      };
      const onDetach = () => finish(errorResult("Tool call left to the session's next owner"));
      detach?.addEventListener("abort", onDetach, { once: true });
      try {
        if (detach?.aborted) return errorResult("Tool call left to the session's next owner");
        if (!call.fresh) {
          const existing = await storedResult(call.sessionId, call.toolCallId);
          if (existing) return existing;
        }
        if (signal.aborted) return errorResult(toolErrorText.aborted);
        if (call.start) {
          const failed = await call.start();
          if (failed !== undefined) return errorResult(failed);
        } else if (opts.runnerAvailable && !opts.runnerAvailable(call.toolName)) {
          const grace = opts.runnerGraceMs ?? 0;
          const appeared = grace > 0 && opts.awaitRunner ? await opts.awaitRunner(call.toolName, grace) : false;
          if (!appeared) return errorResult(toolErrorText.noLiveRunner(call.toolName));
          if (signal.aborted) return errorResult(toolErrorText.aborted);
        }
        if (!call.start) {
          const deadline = opts.now() + call.timeoutMs;
          const encoded = encodeToolCallRequest({
            sessionId: call.sessionId,
            runId: call.runId,
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            args: call.args,
            deadline,
            ...(call.traceparent ? { traceparent: call.traceparent } : {}),
            ...(call.tracestate ? { tracestate: call.tracestate } : {}),
          });
          if (!encoded.ok) return errorResult(`Tool call could not be dispatched: ${encoded.error}`);
          // Retried through a leader election or a NATS restart; the msgID keeps it to one stored call.
          const ack = await opts.publisher.publishDurably(subjects.toolCall(call.toolName), encoded.bytes, {
            msgID: toolCallMsgId(call.sessionId, call.toolCallId),
            stream: STREAMS.toolCalls.name,
            retryForMs: Math.min(call.timeoutMs, DISPATCH_RETRY_MS),
          });
          if (!ack.ok) return errorResult(`Tool call could not be dispatched: ${ack.error}`);
        }
        signal.addEventListener("abort", onAbort, { once: true });
        if (!call.start && pickupTimeout < call.timeoutMs) {
          timers.push(
            setTimeout(async () => {
              if (picked || done) return;
              const late = await storedResult(call.sessionId, call.toolCallId);
              if (late) return finish(late);
              if (done) return;
              cancel();
              finish(errorResult(toolErrorText.noRunner(call.toolName)));
            }, pickupTimeout),
          );
        }
        let checking = false;
        const recheck = setInterval(async () => {
          if (done || checking) return;
          checking = true;
          try {
            const stored = (await storedResult(call.sessionId, call.toolCallId)) ?? (await call.recover?.());
            if (stored) finish(stored);
          } finally {
            checking = false;
          }
        }, opts.resultRecheckMs ?? RESULT_RECHECK_MS);
        timers.push(recheck);
        // The runner enforces the deadline; this timer covers "no runner picked it up" and lost runners.
        // Each update record restarts it: a runner may extend a call's deadline on progress (MCP).
        const armBackstop = () =>
          setTimeout(async () => {
            const late = await storedResult(call.sessionId, call.toolCallId);
            if (late) return finish(late);
            if (done) return;
            cancel();
            finish(errorResult(toolErrorText.noRunner(call.toolName)));
          }, call.timeoutMs + cancelGrace);
        backstop = armBackstop();
        onProgress = () => {
          if (backstop) clearTimeout(backstop);
          backstop = armBackstop();
        };
        return await settled;
      } finally {
        detach?.removeEventListener("abort", onDetach);
        signal.removeEventListener("abort", onAbort);
        for (const t of timers) clearTimeout(t);
        if (backstop) clearTimeout(backstop);
        onProgress = undefined;
        unfollow();
      }
    },
  };
}

function fromFinal(rec: ToolFinalRecord): RemoteToolResult {
  return {
    content: rec.content,
    isError: rec.isError,
    ...(rec.details !== undefined ? { details: rec.details } : {}),
    ...(rec.terminate !== undefined ? { terminate: rec.terminate } : {}),
  };
}
