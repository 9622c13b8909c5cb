// Specs of `replay` (change 51): given the source's log, when `replay` arrives for a new session,
// then the new session's creation, its copied branch and its overrides; a redelivery completes it.
import { foldSessionTreeEvents } from "@fleet/protocol";
import { CONFIG, type EventInput, userMessage } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { command, given, givenLog, HELLO, HI, ONE_RUN } from "../testing/decider-spec.js";

const AGAIN = userMessage("again");
const SECOND_RUN: EventInput[] = [
  { type: "command_accepted", commandId: "c1", commandType: "prompt" },
  { type: "agent_start" },
  { type: "message_start", message: AGAIN },
  { type: "message_end", message: AGAIN },
  { type: "message_start", message: HI },
  { type: "message_end", message: HI },
  { type: "agent_end", messages: [AGAIN, HI] },
];
const sourceLog = () => given({ type: "session_created", config: CONFIG }, ...ONE_RUN, ...SECOND_RUN).log;
const source = () => foldSessionTreeEvents(sourceLog());
/** The source's entries: hello, hi, again, hi. */
const entryIds = () => source().entries.map((e) => e.id);
const MODEL = { provider: "anthropic", modelId: "claude-other" };

describe("replay decider", () => {
  it("needs the source's tree, then creates the session recording the whole replay", () => {
    const cmd = command("replay", { replayOf: { sessionId: "s-src", overrides: { model: MODEL } } });
    expect(given().when(cmd).decision).toEqual({ kind: "needs_fork_source", sessionId: "s-src" });
    given()
      .when(cmd, { forkSource: source() })
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "replay" },
          {
            type: "session_created",
            config: { ...CONFIG, model: MODEL },
            replayOf: {
              sessionId: "s-src",
              fromEntry: null,
              kept: 0,
              toEntry: entryIds()[3],
              overrides: { model: MODEL },
              toolsMode: "recorded",
              turns: [HELLO, AGAIN],
              recorded: [],
            },
          },
        ],
      });
  });

  it("forks at `fromEntry`, then puts the overrides after the copied entries so they win", () => {
    const [hello, hi] = entryIds();
    const cmd = command("replay", {
      replayOf: {
        sessionId: "s-src",
        fromEntry: hi as string,
        overrides: { model: MODEL, thinkingLevel: "high", activeTools: ["read"], systemPrompt: "Be terse." },
        toolsMode: "live",
      },
    });
    const outcome = given().when(cmd, { forkSource: source() });
    expect(outcome.events.map((e) => e.type)).toEqual([
      "command_accepted",
      "session_created",
      "message_end",
      "message_end",
      "model_change",
      "thinking_level_change",
      "active_tools_change",
    ]);
    const created = outcome.events[1];
    expect(created?.type === "session_created" && created.config).toEqual({
      ...CONFIG,
      model: MODEL,
      thinkingLevel: "high",
      activeTools: ["read"],
      systemPrompt: "Be terse.",
    });
    expect(created?.type === "session_created" && created.forkedFrom).toEqual({ sessionId: "s-src", entryId: hi });
    expect(created?.type === "session_created" && created.replayOf?.turns).toEqual([AGAIN]);
    expect(created?.type === "session_created" && created.replayOf?.kept).toBe(2);
    expect(outcome.state.status.model).toEqual(MODEL);
    expect(outcome.state.status.thinkingLevel).toBe("high");
    expect(outcome.state.tree.entries.map((e) => e.type)).toEqual([
      "message",
      "message",
      "model_change",
      "thinking_level_change",
      "active_tools_change",
    ]);
    expect(outcome.state.tree.entries[0]?.type === "message" && outcome.state.tree.entries[0].message).toEqual(HELLO);
    expect(hello).not.toBe(outcome.state.tree.entries[0]?.id);
  });

  it("refuses a missing source, an entry off the branch, unknown tools and an existing session", () => {
    const base = { sessionId: "s-src" };
    given()
      .when(command("replay", { replayOf: base }), { forkSource: null })
      .thenRejected("not_found", "Session s-src not found");
    given()
      .when(command("replay", { replayOf: { ...base, fromEntry: "nope" } }), { forkSource: source() })
      .thenRejected("not_found", "Entry nope is not on the current branch of s-src");
    given()
      .when(command("replay", { replayOf: { ...base, fromEntry: entryIds()[3] as string } }), { forkSource: source() })
      .thenRejected("invalid", "No user message to replay after the fork point");
    given()
      .when(command("replay", { replayOf: { ...base, overrides: { activeTools: ["nope"] } } }))
      .thenRejected("not_found", "Unknown tool: nope");
    given({ type: "session_created", config: CONFIG })
      .when(command("replay", { replayOf: base }))
      .thenRejected("conflict", /already exists/);
  });

  it("a redelivery after a crash cut the acceptance appends only what is missing", () => {
    const cmd = command("replay", { replayOf: { sessionId: "s-src", fromEntry: entryIds()[1] as string } });
    const first = given().when(cmd, { forkSource: source() });
    // The crash came after the outcome and session_created: the copied entries are missing.
    const cut = givenLog(first.events.slice(0, 2));
    const again = cut.whenRedelivered(cmd, { forkSource: source() });
    expect(again.events.map((e) => e.type)).toEqual(["message_end", "message_end"]);
    expect(again.state.tree.entries).toHaveLength(2);
    expect(cut.whenRedelivered(cmd).decision).toEqual({ kind: "needs_fork_source", sessionId: "s-src" });
  });
});
