// Where each run of a session starts in its tree: the entry of the run's first message (pure,
// incremental over the append-only log).
import type { FleetEvent } from "@fleet/protocol";

export class RunIndex {
  /** Entry id of a run's first message → the run's id. */
  readonly firstEntries = new Map<string, string>();
  private readonly runs = new Set<string>();
  private folded = 0;

  /** Reads the events after those read before (`events` only ever grows). */
  update(events: readonly { event: FleetEvent }[]): this {
    for (; this.folded < events.length; this.folded++) {
      const event = (events[this.folded] as { event: FleetEvent }).event;
      const runId = event.meta.runId;
      if (event.type !== "message_end" || runId === undefined || this.runs.has(runId)) continue;
      this.runs.add(runId);
      this.firstEntries.set(event.entry.id, runId);
    }
    return this;
  }
}
