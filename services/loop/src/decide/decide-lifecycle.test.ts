// Specs of the session decider's lifecycle commands: delete_session, archive_session, restore_session.
import type { ArchiveHeader, ArchiveRef, LifecycleRecord } from "@fleet/protocol";
import {
  assistantMessage,
  CONFIG,
  type EventInput,
  SESSION_ID,
  startOf,
  T0,
  toolCall,
  userMessage,
} from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { command, given, givenLog, ONE_RUN } from "../testing/decider-spec.js";
import { DECIDER_TEXT } from "./decide-command.js";

const ARCHIVE: ArchiveRef = { store: "object_store", location: `fleet_archive/sessions/${SESSION_ID}/events.jsonl` };
const archiveRef = () => ARCHIVE;
const created: EventInput[] = [{ type: "session_created", config: CONFIG }];
const idle: EventInput[] = [...created, ...ONE_RUN];
const toolUse = assistantMessage([toolCall("t1", "bash", { command: "ls" })]);
const runOpen: EventInput[] = [
  { type: "command_accepted", commandId: "c-run", commandType: "prompt" },
  { type: "agent_start" },
  { type: "turn_start" },
  { type: "message_start", message: userMessage("go") },
  { type: "message_end", message: userMessage("go") },
];
const OPEN: Record<string, EventInput[]> = {
  streaming: [...idle, ...runOpen, { type: "message_start", message: startOf(toolUse) }],
  tools_pending: [
    ...idle,
    ...runOpen,
    { type: "message_start", message: startOf(toolUse) },
    { type: "message_end", message: toolUse },
    { type: "tool_execution_start", toolCallId: "t1", toolName: "bash", args: { command: "ls" } },
  ],
  awaiting_approval: [
    ...idle,
    ...runOpen,
    { type: "message_start", message: startOf(toolUse) },
    { type: "message_end", message: toolUse },
    { type: "tool_approval_requested", toolCallId: "t1", toolName: "bash", args: { command: "ls" } },
  ],
};
const compacting: EventInput[] = [
  ...idle,
  { type: "command_accepted", commandId: "c-compact", commandType: "compact" },
  { type: "compaction_start", reason: "manual" },
];
/** What the one finished run spent (the spec's assistant messages carry a usage). */
const spendOf = (inputs: EventInput[]) => given(...inputs).state.spend.days;

const header = (sessionId = SESSION_ID): ArchiveHeader => ({
  format: "fleet-archive",
  v: 1,
  sessionId,
  commandId: "c-arc",
  by: "ops",
  archivedAt: T0,
  events: 12,
  firstSeq: 1,
  lastSeq: 12,
  spend: [],
});
const record = (commandId: string): LifecycleRecord => ({
  type: "session_deleted",
  v: 1,
  sessionId: SESSION_ID,
  commandId,
  by: "ops",
  requestedAt: T0,
  ts: T0,
  producer: "loop",
  events: 12,
  spend: [],
});

describe("session decider / delete_session and archive_session", () => {
  it("an idle session is accepted with the session_deleting tombstone: who, how many events, its spend per day", () => {
    const days = [...spendOf(idle)].map(([day, s]) => ({ day, ...s }));
    expect(days.length).toBe(1);
    given(...idle)
      .when(command("delete_session", { by: "ops@host" }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "delete_session" },
          { type: "session_deleting", op: "delete", by: "ops@host", events: idle.length, spend: days },
        ],
        effects: [{ type: "delete_session" }],
      });
  });

  it("an archive names where the archive goes; a requester that is not named is `unspecified`", () => {
    const outcome = given(...idle).when(command("archive_session"), { archiveRef });
    expect(outcome.events[1]).toMatchObject({
      type: "session_deleting",
      op: "archive",
      by: "unspecified",
      archive: ARCHIVE,
    });
    expect(outcome.events[1]?.meta.commandId).toBe("cmd-1");
    expect(outcome.state.deleting).toMatchObject({ commandId: "cmd-1", op: "archive" });
  });

  it("an archive on a worker without an archive is unsupported", () => {
    given(...idle)
      .when(command("archive_session"))
      .thenRejected("unsupported");
  });

  for (const [state, log] of Object.entries(OPEN)) {
    for (const type of ["delete_session", "archive_session"] as const) {
      it(`${type} while ${state} is busy: abort the run first`, () => {
        given(...log)
          .when(command(type), { archiveRef })
          .thenRejected("busy", DECIDER_TEXT.deleteBusy);
      });
    }
  }

  it("while a compaction is open, busy", () => {
    given(...compacting)
      .when(command("delete_session"))
      .thenRejected("busy", DECIDER_TEXT.compacting);
  });

  it("a session without a log: the last lifecycle record is fetched first", () => {
    const outcome = given().when(command("delete_session"));
    expect(outcome.decision).toEqual({ kind: "needs_lifecycle_record", sessionId: SESSION_ID });
  });

  it("a session without a log whose last record is this command's (a redelivery after it finished) decides nothing", () => {
    given()
      .when(command("delete_session"), { lastLifecycle: record("cmd-1") })
      .then({ events: [], effects: [] });
  });

  it("a session without a log and no record of this command is not_found", () => {
    given().when(command("delete_session"), { lastLifecycle: null }).thenRejected("not_found");
    given()
      .when(command("archive_session"), { lastLifecycle: record("another") })
      .thenRejected("not_found", DECIDER_TEXT.notFound(SESSION_ID));
  });

  it("a session being deleted refuses every command, a second deletion included", () => {
    const deleting = given(...idle).when(command("delete_session", { id: "c-del" }));
    const log = [...idle, ...deleting.events.map(({ meta: _meta, ...e }) => e as EventInput)];
    for (const cmd of [command("prompt", { text: "x" }), command("delete_session"), command("restore_session")]) {
      given(...log)
        .when(cmd, { archiveRef })
        .thenRejected("conflict", DECIDER_TEXT.deleting(SESSION_ID));
    }
  });

  it("a redelivery goes on with the deletion, and appends its tombstone when a crash came before it", () => {
    const accepted: EventInput = { type: "command_accepted", commandId: "cmd-1", commandType: "delete_session" };
    const cut = given(...idle, accepted).whenRedelivered(command("delete_session", { by: "ops" }));
    cut.then({
      events: [
        { type: "session_deleting", op: "delete", by: "ops", events: idle.length + 1, spend: expect.any(Array) },
      ],
      effects: [{ type: "delete_session" }],
    });
    expect(cut.events[0]?.meta.commandId).toBe("cmd-1");
    const whole = given(...idle, accepted, {
      type: "session_deleting",
      op: "delete",
      by: "ops",
      events: idle.length,
      spend: [],
    }).whenRedelivered(command("delete_session"));
    whole.then({ events: [], effects: [{ type: "delete_session" }] });
  });
});

describe("session decider / restore_session", () => {
  it("a session without a log: the archive is read first; then it is accepted with session_restoring", () => {
    expect(given().when(command("restore_session"), { archiveRef }).decision).toEqual({
      kind: "needs_archive",
      sessionId: SESSION_ID,
    });
    given()
      .when(command("restore_session", { by: "ops" }), { archiveRef, archive: { header: header(), ref: ARCHIVE } })
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "restore_session" },
          { type: "session_restoring", by: "ops", archive: ARCHIVE },
        ],
        effects: [{ type: "restore_session" }],
      });
  });

  it("without an archive it is not_found; a session that exists is a conflict", () => {
    given()
      .when(command("restore_session"), { archiveRef, archive: null })
      .thenRejected("not_found", DECIDER_TEXT.noArchive(SESSION_ID));
    given(...idle)
      .when(command("restore_session"), { archiveRef })
      .thenRejected("conflict", DECIDER_TEXT.exists(SESSION_ID));
  });

  it("a redelivery goes on with the restore, appending session_restoring only when a crash came before it", () => {
    const accepted: EventInput = { type: "command_accepted", commandId: "cmd-1", commandType: "restore_session" };
    given(accepted)
      .whenRedelivered(command("restore_session", { by: "ops" }), { archiveRef })
      .then({
        events: [{ type: "session_restoring", by: "ops", archive: ARCHIVE }],
        effects: [{ type: "restore_session" }],
      });
    const started = given().when(command("restore_session", { by: "ops" }), {
      archiveRef,
      archive: { header: header(), ref: ARCHIVE },
    });
    givenLog(started.events)
      .whenRedelivered(command("restore_session"), { archiveRef })
      .then({ events: [], effects: [{ type: "restore_session" }] });
  });

  it("the restored history folds like the original, and the session takes commands again", () => {
    const restored = given(
      { type: "command_accepted", commandId: "cmd-r", commandType: "restore_session" },
      { type: "session_restoring", by: "ops", archive: ARCHIVE },
      ...idle,
      { type: "session_restored", archive: ARCHIVE, events: idle.length },
    );
    expect(restored.state.tree.entries.map((e) => e.type)).toEqual(
      given(...idle).state.tree.entries.map((e) => e.type),
    );
    expect(restored.state.deleting).toBeNull();
    restored.when(command("prompt", { text: "again" })).then({
      events: [
        {
          type: "command_accepted",
          commandId: "cmd-1",
          commandType: "prompt",
          messages: [userMessage("again", T0)],
        },
      ],
      effects: [{ type: "start_run", kind: "prompt", messages: [userMessage("again", T0)] }],
    });
  });
});
