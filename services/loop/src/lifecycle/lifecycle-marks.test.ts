// Where the log's deletion and restore stand, and which blobs a session's log refers to.
import type { FleetEvent } from "@fleet/protocol";
import { CONFIG, createLogBuilder, textOf } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { sessionBlobNames } from "./blob-refs.js";
import { type LifecycleMarks, markLifecycle, restoreOpen } from "./lifecycle-marks.js";

/** Marks an event as a command's (the log builder stamps no `meta.commandId`). */
const ofCommand = (event: FleetEvent, commandId: string) => {
  event.meta.commandId = commandId;
  return event;
};
const ARCHIVE = { store: "directory" as const, location: "/a/sessions/s-1/events.jsonl" };

function marksOf(build: (log: ReturnType<typeof createLogBuilder>) => void): LifecycleMarks {
  const log = createLogBuilder(5);
  build(log);
  const marks: LifecycleMarks = {};
  for (const [i, e] of log.events.entries()) markLifecycle(marks, e, 100 + i);
  return marks;
}

describe("lifecycle marks", () => {
  it("a deletion: the sequences of its outcome and of its tombstone", () => {
    const marks = marksOf((log) => {
      log.add({ type: "session_created", config: CONFIG });
      log.add({ type: "command_accepted", commandId: "del", commandType: "delete_session" });
      log.add({ type: "session_deleting", op: "delete", by: "ops", events: 1, spend: [] });
    });
    expect(marks.deletion).toEqual({ commandId: "del", acceptSeq: 101, tombstoneSeq: 102 });
  });

  it("a restore counts the events after its start until its session_restored, and is over once more follow", () => {
    const restoring = (log: ReturnType<typeof createLogBuilder>) => {
      log.add({ type: "command_accepted", commandId: "r1", commandType: "restore_session" });
      ofCommand(log.add({ type: "session_restoring", by: "ops", archive: ARCHIVE }), "r1");
      log.add({ type: "session_created", config: CONFIG });
      log.add({ type: "leaf", targetId: null });
    };
    const partial = marksOf(restoring);
    expect(partial.restore).toMatchObject({ commandId: "r1", by: "ops", appended: 2, restored: false, after: 0 });
    expect(restoreOpen(partial)).toBe(true);
    const ended = marksOf((log) => {
      restoring(log);
      ofCommand(log.add({ type: "session_restored", archive: ARCHIVE, events: 2 }), "r1");
    });
    expect(ended.restore).toMatchObject({ appended: 2, restored: true, after: 0 });
    expect(restoreOpen(ended)).toBe(true);
    const used = marksOf((log) => {
      restoring(log);
      ofCommand(log.add({ type: "session_restored", archive: ARCHIVE, events: 2 }), "r1");
      log.add({ type: "session_info", name: "later" });
    });
    expect(restoreOpen(used)).toBe(false);
  });

  it("a restore inside the restored history (restored before) is history, not the current restore", () => {
    const marks = marksOf((log) => {
      ofCommand(log.add({ type: "session_restoring", by: "now", archive: ARCHIVE }), "r2");
      ofCommand(log.add({ type: "session_restoring", by: "before", archive: ARCHIVE }), "r1");
      ofCommand(log.add({ type: "session_restored", archive: ARCHIVE, events: 0 }), "r1");
    });
    expect(marks.restore).toMatchObject({ commandId: "r2", appended: 2, restored: false });
  });
});

describe("a session's blobs", () => {
  it("are the BlobRefs under its own prefix in its tool results and updates, not a fork source's", () => {
    const log = createLogBuilder(6);
    const ref = (name: string) => ({ bucket: "fleet_blobs", name, size: 1 });
    log.add({
      type: "tool_execution_end",
      toolCallId: "t1",
      toolName: "bash",
      result: { content: [textOf("x")], details: { fullOutput: ref("tool-output/s-1/t1/bash-output.txt") } },
      isError: false,
    });
    log.add({
      type: "tool_execution_update",
      toolCallId: "t2",
      toolName: "read",
      args: {},
      partialResult: { nested: [{ deep: ref("tool-output/s-1/t2/read-x.png") }] },
    });
    log.add({
      type: "message_end",
      message: {
        role: "toolResult",
        toolCallId: "t3",
        toolName: "bash",
        content: [textOf("copied")],
        details: { fullOutput: ref("tool-output/s-0/t3/bash-output.txt") },
        isError: false,
        timestamp: 1,
      },
    });
    for (const owner of ["s-1", "s-0"]) {
      log.add({
        type: "hook_decision",
        hook: "transform_context",
        server: "redact",
        inputHash: "0".repeat(64),
        turn: 1,
        outputRef: ref(`hooks/${owner}/transform_context/redact/${"0".repeat(64)}`),
      });
    }
    expect([...sessionBlobNames("s-1", log.events)].sort()).toEqual([
      `hooks/s-1/transform_context/redact/${"0".repeat(64)}`,
      "tool-output/s-1/t1/bash-output.txt",
      "tool-output/s-1/t2/read-x.png",
    ]);
  });
});
