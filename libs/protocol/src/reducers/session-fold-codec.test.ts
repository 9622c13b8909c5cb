// A fold rebuilt from its encoding folds on exactly as the original: at every cut of every golden
// log (pi's recorded sessions: tools, aborts, errors, steering, branches and compaction).
import { describe, expect, it } from "vitest";
import { SCENARIOS } from "../../fixtures/scenarios.js";
import type { FleetEvent } from "../events.js";
import { decodeSessionFold, encodeSessionFold } from "./session-fold-codec.js";
import { foldSessionEvents, runCursorOf, type SessionState } from "./session-state.js";

/** Through JSON text, as a snapshot stores it. */
function roundTrip(state: SessionState): SessionState {
  const decoded = decodeSessionFold(JSON.parse(JSON.stringify(encodeSessionFold(state))));
  if (!decoded.ok) throw new Error(decoded.error);
  return decoded.value;
}

const sharesStreaming = (s: SessionState) =>
  s.cursor.kind === "streaming" &&
  s.status.streamingMessage !== undefined &&
  s.status.streamingMessage === s.cursor.partial;

describe("session fold codec", () => {
  for (const [name, make] of Object.entries(SCENARIOS)) {
    it(`${name}: at every cut, the decoded fold equals the fold and folds the rest to the same state`, () => {
      const events: FleetEvent[] = make();
      const whole = foldSessionEvents(events);
      for (let cut = 0; cut <= events.length; cut++) {
        const prefix = foldSessionEvents(events.slice(0, cut));
        const restored = roundTrip(prefix);
        expect(restored, `cut ${cut}`).toStrictEqual(prefix);
        expect(sharesStreaming(restored), `cut ${cut}`).toBe(sharesStreaming(prefix));
        expect(foldSessionEvents(events.slice(cut), restored), `cut ${cut}`).toStrictEqual(whole);
      }
    });
  }

  it("a snapshot taken mid-stream keeps its unapplied deltas, and they settle as the original's do", () => {
    const events = SCENARIOS["abort-mid-stream"]?.() ?? [];
    const cut = events.findLastIndex((e) => e.type === "message_update") + 1;
    expect(cut).toBeGreaterThan(0);
    const prefix = foldSessionEvents(events.slice(0, cut));
    expect(prefix.streamDeltas.length).toBeGreaterThan(0);
    const restored = roundTrip(prefix);
    expect(runCursorOf(restored)).toStrictEqual(runCursorOf(prefix));
    expect(restored.status.streamingMessage).toStrictEqual(prefix.status.streamingMessage);
  });

  it("keeps the approval policy's state: rules, expiry, outcome and edited arguments", () => {
    const base = SCENARIOS.steering?.() ?? [];
    const meta = (i: number) => ({ ...(base[0] as FleetEvent).meta, id: `e-policy-${i}` });
    const events = [
      ...base,
      { type: "approval_rules_set", rules: [{ tool: "bash", action: "ask", expiresInMs: 60_000 }], meta: meta(1) },
      {
        type: "tool_approval_requested",
        toolCallId: "c1",
        toolName: "bash",
        args: { command: "rm x" },
        expiresAt: 5,
        meta: meta(2),
      },
      { type: "tool_approval_requested", toolCallId: "c2", toolName: "bash", args: { command: "ls" }, meta: meta(3) },
      { type: "tool_approval_resolved", toolCallId: "c1", approved: false, outcome: "expired", meta: meta(4) },
      {
        type: "tool_approval_resolved",
        toolCallId: "c2",
        approved: true,
        editedArgs: { command: "ls -a" },
        meta: meta(5),
      },
    ] as FleetEvent[];
    const state = foldSessionEvents(events);
    expect(state.approvalRules).toHaveLength(1);
    expect(state.approvals.get("c1")).toMatchObject({ expiresAt: 5, decision: { outcome: "expired" } });
    expect(state.approvals.get("c2")?.decision).toMatchObject({
      outcome: "approved",
      editedArgs: { command: "ls -a" },
    });
    expect(roundTrip(state)).toStrictEqual(state);
  });

  it("refuses what is not an encoded fold, naming where", () => {
    const good = JSON.parse(JSON.stringify(encodeSessionFold(foldSessionEvents(SCENARIOS.steering?.() ?? []))));
    expect(decodeSessionFold(null).ok).toBe(false);
    const badCursor = decodeSessionFold({ ...good, cursor: { kind: "flying" } });
    expect(badCursor.ok === false && badCursor.error).toMatch(/^cursor\.kind/);
    const badCommands = decodeSessionFold({ ...good, commands: [["c1", "prompt", "maybe", 0]] });
    expect(badCommands.ok === false && badCommands.error).toMatch(/^commands\.0\.2/);
    const lonePartial = decodeSessionFold({ ...good, status: { ...good.status, streamingIsPartial: true } });
    expect(lonePartial.ok === false && lonePartial.error).toMatch(/streamingIsPartial/);
  });
});
