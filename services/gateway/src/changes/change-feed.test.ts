import { describe, expect, it } from "vitest";
import { changeOf } from "./change-feed.js";

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("gateway / change feed", () => {
  it("names the session of an event or a lifecycle record, and whether approvals may have changed", () => {
    expect(changeOf("fleet.evt.3.s-1", json({ type: "message_update" }))).toEqual({
      sessionId: "s-1",
      approvals: false,
    });
    for (const type of ["tool_approval_requested", "tool_approval_resolved", "agent_end", "session_deleting"]) {
      expect(changeOf("fleet.evt.0.s-2", json({ type }))).toEqual({ sessionId: "s-2", approvals: true });
    }
    expect(changeOf("fleet.evt.lifecycle.s-3", json({ type: "session_deleted" }))).toEqual({
      sessionId: "s-3",
      approvals: true,
    });
    // Not JSON, or no type: the session still changed.
    expect(changeOf("fleet.evt.1.s-4", new TextEncoder().encode("{oops"))).toEqual({
      sessionId: "s-4",
      approvals: false,
    });
    expect(changeOf("fleet.cmd.1.s-4", json({ type: "prompt" }))).toBeNull();
    expect(changeOf("fleet.evt.x.s-4", json({ type: "agent_end" }))).toBeNull();
  });
});
