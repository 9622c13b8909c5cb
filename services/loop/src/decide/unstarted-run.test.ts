// Specs of unstartedRun: given a log, the run an accepted command began and never started.
import { CONFIG, userMessage } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { given, HELLO, ONE_RUN } from "../testing/decider-spec.js";
import { unstartedRun } from "./unstarted-run.js";

const created = { type: "session_created", config: CONFIG } as const;
const LOGGED = userMessage("logged prompt");

describe("unstartedRun", () => {
  it("given a prompt accepted with its messages and no agent_start, then a prompt run with those messages", () => {
    const { state } = given(created, {
      type: "command_accepted",
      commandId: "c1",
      commandType: "prompt",
      messages: [LOGGED],
    });
    expect(unstartedRun(state)).toEqual({ type: "start_run", kind: "prompt", messages: [LOGGED] });
  });

  it("given an accepted continue and no agent_start, then a continue run", () => {
    const { state } = given(created, ...ONE_RUN, {
      type: "command_accepted",
      commandId: "c1",
      commandType: "continue",
    });
    expect(unstartedRun(state)).toEqual({ type: "start_run", kind: "continue" });
  });

  it("given the accepted prompt's run started, then nothing", () => {
    const { state } = given(
      created,
      { type: "command_accepted", commandId: "c1", commandType: "prompt", messages: [HELLO] },
      { type: "agent_start" },
    );
    expect(unstartedRun(state)).toBeUndefined();
  });

  it("given a finished run, or an append_message that starts no run, then nothing", () => {
    expect(unstartedRun(given(created, ...ONE_RUN).state)).toBeUndefined();
    const appended = given(created, { type: "command_accepted", commandId: "c1", commandType: "append_message" });
    expect(unstartedRun(appended.state)).toBeUndefined();
  });

  it("given a prompt accepted in a log from before command_accepted.messages, then nothing (its redelivery starts it)", () => {
    const { state } = given(created, { type: "command_accepted", commandId: "c1", commandType: "prompt" });
    expect(unstartedRun(state)).toBeUndefined();
  });
});
