// Writes held until the end of the event loop's turn, so that a client that gets several frames in
// one turn (events that arrived together: a run's last events, a backlog) gets one socket write.

/** What holds bytes for the end of the turn. */
export interface TurnFlushable {
  /** Writes what it holds. Called once per `flushAtTurnEnd`, in the order of those calls. */
  flushTurn(): void;
}

const due: TurnFlushable[] = [];
let scheduled = false;

/**
 * Contract: `target.flushTurn()` runs once, after every I/O callback and microtask of the current
 * turn of the event loop (its check phase: `setImmediate`), so before the loop waits for I/O again.
 * A target queues itself once per turn (when it starts holding bytes).
 */
export function flushAtTurnEnd(target: TurnFlushable): void {
  due.push(target);
  if (scheduled) return;
  scheduled = true;
  setImmediate(flushDue);
}

function flushDue(): void {
  scheduled = false;
  const targets = due.splice(0);
  for (const target of targets) target.flushTurn();
}
