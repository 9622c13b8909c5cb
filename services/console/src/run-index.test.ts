import type { FleetEvent } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { RunIndex } from "./run-index.js";

const messageEnd = (entryId: string, runId?: string) =>
  ({
    event: {
      type: "message_end",
      message: { role: "user", content: entryId, timestamp: 0 },
      entry: { id: entryId, parentId: null },
      meta: { id: `ev-${entryId}`, sessionId: "s", ts: 0, ...(runId ? { runId } : {}) },
    } as unknown as FleetEvent,
  }) as const;

describe("console / run index", () => {
  it("maps each run to the entry of its first message, reading only new events", () => {
    const log = [messageEnd("imported"), messageEnd("u1", "r1"), messageEnd("a1", "r1")];
    const index = new RunIndex().update(log);
    expect([...index.firstEntries]).toEqual([["u1", "r1"]]);
    log.push(messageEnd("u2", "r2"), messageEnd("a2", "r2"));
    expect([...index.update(log).firstEntries]).toEqual([
      ["u1", "r1"],
      ["u2", "r2"],
    ]);
  });
});
