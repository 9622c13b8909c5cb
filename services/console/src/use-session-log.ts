// A session's log in the browser: the whole log first (`follow=false`), then live events after it
// (EventSource with a stream ticket).
import { useEffect, useRef, useState } from "preact/hooks";
import { ReplayLog } from "./replay.js";
import { followEvents, streamEvents } from "./sse.js";

/** Longest stretch of background checkpoint work between two yields to the page. */
const SETTLE_SLICE_MS = 8;

export type LogStatus =
  | { kind: "loading" }
  | { kind: "open"; openMs: number }
  | { kind: "missing"; message: string }
  | { kind: "error"; message: string };

export interface SessionLog {
  log: ReplayLog;
  status: LogStatus;
  /** Bumped on every appended batch (re-render trigger). */
  version: number;
}

export function useSessionLog(sessionId: string): SessionLog {
  const logRef = useRef<ReplayLog>(new ReplayLog());
  const [status, setStatus] = useState<LogStatus>({ kind: "loading" });
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const log = new ReplayLog();
    logRef.current = log;
    setStatus({ kind: "loading" });
    setVersion(0);
    const abort = new AbortController();
    const started = performance.now();
    let frame = 0;
    const bump = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setVersion((v) => v + 1);
      });
    };
    void (async () => {
      const first = await streamEvents(sessionId, {
        after: 0,
        follow: false,
        signal: abort.signal,
        onBatch: (items) => log.append(items),
      });
      if (abort.signal.aborted) return;
      if (!first.ok) {
        setStatus(
          first.status === 404
            ? { kind: "missing", message: first.message }
            : { kind: "error", message: `${first.status}: ${first.message}` },
        );
        return;
      }
      setStatus({ kind: "open", openMs: performance.now() - started });
      setVersion((v) => v + 1);
      // Then, in slices that leave the page responsive, make every checkpoint ready for the slider.
      const settle = () => {
        if (!abort.signal.aborted && log.settleCheckpoints(performance.now() + SETTLE_SLICE_MS)) setTimeout(settle, 0);
      };
      setTimeout(settle, 0);
      let after = first.lastSeq;
      while (!abort.signal.aborted) {
        const live = await followEvents(sessionId, {
          after,
          signal: abort.signal,
          onBatch: (items) => {
            log.append(items);
            bump();
          },
        });
        after = log.latest().seq;
        if (!abort.signal.aborted) await new Promise((r) => setTimeout(r, live.ok ? 200 : 1000));
      }
    })();
    return () => {
      abort.abort();
      if (frame) cancelAnimationFrame(frame);
    };
  }, [sessionId]);
  return { log: logRef.current, status, version };
}
