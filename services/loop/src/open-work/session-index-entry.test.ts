// The session's open-work entry as its writer keeps it: an index that records its operations, a
// session whose openness the test sets, appends that open and close work. With `lingerMs`, the entry
// of a session prompted again soon after its run ended is neither removed nor written again.
import type { FleetEvent } from "@fleet/protocol";
import { createLogger } from "@fleet/runtime";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { OpenWorkKind } from "./open-work.js";
import type { OpenWorkIndex } from "./open-work-index.js";
import { createSessionIndexEntry } from "./session-index-entry.js";

const accepted = { type: "command_accepted" } as FleetEvent;

function setup(lingerMs?: number) {
  const ops: string[] = [];
  const index: OpenWorkIndex = {
    mark: async () => void ops.push("mark"),
    unmark: async () => void ops.push("unmark"),
    list: async () => [],
    scanned: async () => true,
    noteScanned: async () => undefined,
  };
  let open: OpenWorkKind[] = [];
  const detach = new AbortController();
  const entry = createSessionIndexEntry({
    index,
    partition: 0,
    sessionId: "s",
    open: () => open,
    signal: detach.signal,
    logger: createLogger("test", { level: "silent" }),
    ...(lingerMs === undefined ? {} : { lingerMs }),
  });
  /** One run: an append that opens work, then one that closes it. */
  const run = async () => {
    await entry.around(accepted, async () => {
      open = ["run"];
    });
    await entry.around(accepted, async () => {
      open = [];
    });
  };
  return { ops, entry, run, detach };
}

/** Lets the entry's chain of index operations run. */
const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe("session index entry", () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it("without linger: written before the run, removed as soon as it ended", async () => {
    const { ops, run } = setup();
    await run();
    await flush();
    expect(ops).toEqual(["mark", "unmark"]);
    await run();
    await flush();
    expect(ops).toEqual(["mark", "unmark", "mark", "unmark"]);
  });

  it("with linger: a run within it keeps the entry (no removal, no second write); removed once quiet", async () => {
    const { ops, run } = setup(1_000);
    await run();
    await flush();
    expect(ops).toEqual(["mark"]);
    await vi.advanceTimersByTimeAsync(500);
    await run();
    await vi.advanceTimersByTimeAsync(900);
    expect(ops).toEqual(["mark"]);
    await vi.advanceTimersByTimeAsync(100);
    await flush();
    expect(ops).toEqual(["mark", "unmark"]);
    // Removed: the next run writes it again.
    await run();
    await flush();
    expect(ops).toEqual(["mark", "unmark", "mark"]);
  });

  it("with linger: a writer that let the session go removes nothing", async () => {
    const { ops, run, detach } = setup(1_000);
    await run();
    detach.abort();
    await vi.advanceTimersByTimeAsync(2_000);
    expect(ops).toEqual(["mark"]);
  });

  it("with linger: forget removes the entry at once", async () => {
    const { ops, entry, run } = setup(1_000);
    await run();
    await entry.forget();
    expect(ops).toEqual(["mark", "unmark"]);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(ops).toEqual(["mark", "unmark"]);
  });
});
