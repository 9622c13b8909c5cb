import type { ToolFinalRecord } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import type { CallOutcome } from "./execute-call.js";
import { decideSettlement } from "./settle-decision.js";

const record = (text: string, isError = false): ToolFinalRecord => ({
  kind: "result",
  content: [{ type: "text", text }],
  details: {},
  isError,
});
const safe = { name: "bash", retry: "safe" as const };
const never = { name: "bash", retry: "never" as const };

/** Given how execution ended, when the runner settles the call for `tool`. */
const when = (outcome: CallOutcome, tool: { name: string; retry: "safe" | "never" } = safe) =>
  decideSettlement(outcome, tool);

describe("decideSettlement", () => {
  it("given a finished call, then its record is published, labelled ok or error", () => {
    expect(when({ kind: "done", record: record("hi") })).toEqual({
      kind: "publish",
      record: record("hi"),
      outcome: "ok",
    });
    expect(when({ kind: "done", record: record("boom", true) }, never)).toEqual({
      kind: "publish",
      record: record("boom", true),
      outcome: "error",
    });
  });

  it("given arguments that failed validation, then the error record is published as invalid_args", () => {
    expect(when({ kind: "done", record: record("bad args", true), validationFailed: true })).toMatchObject({
      kind: "publish",
      outcome: "invalid_args",
    });
  });

  it("given a cancel or a deadline, then the abort record is published whatever the retry policy", () => {
    expect(when({ kind: "aborted", cause: "cancel", record: record("Operation aborted", true) }, never)).toEqual({
      kind: "publish",
      record: record("Operation aborted", true),
      outcome: "aborted",
    });
    expect(when({ kind: "aborted", cause: "deadline", record: record("late", true) })).toMatchObject({
      kind: "publish",
      outcome: "deadline",
    });
  });

  it("given a shutdown abort of a retry:safe call, then it is handed back to the queue and nothing is published", () => {
    expect(when({ kind: "aborted", cause: "shutdown", record: record("Operation aborted", true) })).toEqual({
      kind: "requeue",
    });
  });

  it("given a shutdown abort of a retry:never call, then the runner-lost error replaces the abort record", () => {
    expect(when({ kind: "aborted", cause: "shutdown", record: record("Operation aborted", true) }, never)).toEqual({
      kind: "publish",
      record: record("Tool runner lost while executing bash", true),
      outcome: "runner_lost",
    });
  });
});
