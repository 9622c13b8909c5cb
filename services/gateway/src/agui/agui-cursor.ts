// Which AG-UI frames one stream carries, and their SSE ids (pure).
//
// The frames an event yields are numbered 1..n; frame k < n has id `<seq>.<k>`, the last one `<seq>`
// (`seq` is the event's stream sequence). So an id names one frame exactly, and after a whole event
// the id is its stream sequence, as on `/v1/sessions/{id}/events`.
import type { AguiFrame } from "./agui-projection.js";

/** A place in a thread's frames: after frame `k` of the event at `seq` (`k` = Infinity: after all of them). */
export interface FramePosition {
  seq: number;
  k: number;
}

export const frameId = (seq: number, k: number, n: number): string => (k === n ? `${seq}` : `${seq}.${k}`);

/** `<seq>` or `<seq>.<k>` (k ≥ 1) as a position; anything else is malformed. */
export function parseFrameId(id: string): FramePosition | "invalid" {
  const match = /^(\d{1,15})(?:\.([1-9]\d{0,5}))?$/.exec(id.trim());
  if (!match) return "invalid";
  return { seq: Number(match[1]), k: match[2] === undefined ? Number.POSITIVE_INFINITY : Number(match[2]) };
}

/**
 * What a stream follows. `next`: the first run whose RUN_STARTED comes after `after` (a POST: the run
 * its command opened). `resume`: the run the frame at `after` belongs to, unless that frame ended its
 * run (or there is none), and then the next run to start.
 */
export interface AguiCursor {
  after: FramePosition;
  mode: "next" | "resume";
  /** The run followed, once known. */
  run: string | null;
  /** Resume mode: the run and end of the last frame at or before `after`. */
  last: { run: string; terminal: boolean } | null;
  done: boolean;
}

export const aguiCursor = (after: FramePosition, mode: "next" | "resume"): AguiCursor => ({
  after,
  mode,
  run: null,
  last: null,
  done: false,
});

/** A frame to send: its SSE id and event. */
export interface OutFrame {
  id: string;
  frame: AguiFrame;
}

/**
 * The frames of the event at `seq` that the stream sends, and the cursor after them. Once the
 * followed run's RUN_FINISHED or RUN_ERROR is sent, `done` is set and nothing more is sent.
 */
export function advanceCursor(
  cursor: AguiCursor,
  seq: number,
  frames: readonly AguiFrame[],
): { cursor: AguiCursor; out: OutFrame[] } {
  let c = cursor;
  const out: OutFrame[] = [];
  frames.forEach((frame, i) => {
    const k = i + 1;
    if (c.done) return;
    const before = seq < c.after.seq || (seq === c.after.seq && k <= c.after.k);
    if (before) {
      if (c.mode === "resume") c = { ...c, last: { run: frame.run, terminal: frame.terminal } };
      return;
    }
    if (c.run === null) {
      const following = c.mode === "resume" && c.last && !c.last.terminal ? c.last.run : null;
      if (following !== null) c = { ...c, run: following };
      else if (frame.event.type === "RUN_STARTED") c = { ...c, run: frame.run };
      else return;
    }
    if (frame.run !== c.run) return;
    out.push({ id: frameId(seq, k, frames.length), frame });
    if (frame.terminal) c = { ...c, done: true };
  });
  return { cursor: c, out };
}
