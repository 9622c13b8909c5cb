// An error text from outside the loop that reads like a resumed run's cut close must end the run
// like any other error: only the loop's own close makes its call again (change 77).
import type { AssistantMessage } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { foreignErrorText, isCutClose } from "../session-core/turn-boundary.js";
import { interruptedErrorMessage } from "./resume-point.js";
import { testEngine, trace } from "./testing/harness.js";
import type { EngineEvent, StreamFn } from "./types.js";

const LOOKALIKE = interruptedErrorMessage("upstream proxy");

function lastAssistant(events: readonly EngineEvent[]): AssistantMessage {
  const end = events.findLast((e) => e.body.type === "message_end")?.body;
  if (end?.type !== "message_end" || end.message.role !== "assistant") throw new Error("no assistant message_end");
  return end.message;
}

describe("an error text from outside the loop", () => {
  it("foreignErrorText: a look-alike of the cut close's text gets `Error: ` before it, any other text is kept", () => {
    expect(foreignErrorText(LOOKALIKE)).toBe(`Error: ${LOOKALIKE}`);
    expect(foreignErrorText("overloaded")).toBe("overloaded");
    expect(foreignErrorText(`x ${LOOKALIKE}`)).toBe(`x ${LOOKALIKE}`);
  });

  it("a provider's error event with the cut close's text ends the run after one call", async () => {
    const { engine, rec, provider } = testEngine({ steps: [{ error: LOOKALIKE }, { text: "never" }] });
    await engine.prompt("hi");
    expect(provider.requests).toHaveLength(1);
    expect(trace(rec.events).slice(-4)).toEqual([
      "message_start:assistant(…)",
      "message_end:assistant(error)",
      "turn_end[]",
      "agent_end(2)",
    ]);
    const message = lastAssistant(rec.events);
    expect(message.errorMessage).toBe(`Error: ${LOOKALIKE}`);
    expect(isCutClose(message)).toBe(false);
  });

  it("a provider that throws the cut close's text ends the run with pi's failure message", async () => {
    let calls = 0;
    const streamFn: StreamFn = () => {
      calls++;
      throw new Error(LOOKALIKE);
    };
    const { engine, rec } = testEngine({ streamFn });
    await engine.prompt("hi");
    expect(calls).toBe(1);
    expect(trace(rec.events).at(-1)).toBe("agent_end(1)");
    const message = lastAssistant(rec.events);
    expect(message.stopReason).toBe("error");
    expect(message.errorMessage).toBe(`Error: ${LOOKALIKE}`);
  });
});
