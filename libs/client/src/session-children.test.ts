// The child sessions of a session, derived from the parent's transcript and each child's log.
import {
  AGENT_TOOL_NAME,
  childSessionId,
  type FleetEvent,
  foldSessionSpend,
  initialSessionSpend,
} from "@fleet/protocol";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  startOf,
  textOf,
  toolCall,
  userMessage,
} from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import type { ReplayResult } from "./read-options.js";
import { approvalsWithDescendants, sessionChildren } from "./session-children.js";
import { emptySessionView, foldSessionViewEvents } from "./session-view.js";

function replayOf(events: FleetEvent[]): ReplayResult {
  const view = foldSessionViewEvents(
    emptySessionView(),
    events.map((event, i) => ({ seq: i + 1, event })),
  );
  const spend = initialSessionSpend();
  for (const e of events) foldSessionSpend(spend, e);
  return { ...view, events: events.length, invalid: [], spend };
}

/** A session whose run made the given tool calls in one message and (unless `open`) ended. */
function sessionWith(
  sessionId: string,
  seed: number,
  calls: ReturnType<typeof toolCall>[],
  open = false,
): FleetEvent[] {
  const log = createLogBuilder(seed, sessionId);
  log.add({ type: "session_created", config: CONFIG });
  log.add({ type: "command_accepted", commandId: `c-${seed}`, commandType: "prompt" });
  log.add({ type: "agent_start" });
  log.add({ type: "turn_start" });
  log.add({ type: "message_start", message: userMessage("go") });
  log.add({ type: "message_end", message: userMessage("go") });
  const message = assistantMessage(calls.length > 0 ? calls : [textOf("done")]);
  log.add({ type: "message_start", message: startOf(message) });
  log.add({ type: "message_end", message });
  if (!open) log.add({ type: "agent_end", messages: [message] });
  return log.events;
}

describe("sessionChildren", () => {
  it("lists the agent calls' children in call order with status, and their own children at depth 2", async () => {
    const P = "parent-s";
    const c1 = childSessionId(P, "a1");
    const c2 = childSessionId(P, "a2");
    const c3 = childSessionId(P, "a3");
    const g1 = childSessionId(c1, "g1");
    const logs = new Map<string, FleetEvent[]>([
      [
        P,
        sessionWith(P, 1, [
          toolCall("a1", AGENT_TOOL_NAME, { prompt: "one", agent: "worker", description: "first" }),
          toolCall("b1", "bash", { command: "ls" }),
          toolCall("a2", AGENT_TOOL_NAME, { prompt: "two" }),
          toolCall("a3", AGENT_TOOL_NAME, { prompt: "three" }),
        ]),
      ],
      [c1, sessionWith(c1, 2, [toolCall("g1", AGENT_TOOL_NAME, { prompt: "deeper" })])],
      [c2, sessionWith(c2, 3, [], true)],
      [g1, sessionWith(g1, 4, [])],
    ]);
    const load = async (id: string) => replayOf(logs.get(id) ?? []);
    const children = await sessionChildren(load, P, 2);
    expect(children.map((c) => [c.sessionId, c.toolCallId, c.status, c.agent, c.description])).toEqual([
      [c1, "a1", "idle", "worker", "first"],
      [c2, "a2", "running", undefined, undefined],
      [c3, "a3", "pending", undefined, undefined],
    ]);
    expect(children[0]?.children?.map((c) => [c.sessionId, c.status])).toEqual([[g1, "idle"]]);
    expect(children[1]?.children).toEqual([]);
    expect(children[2]?.children).toBeUndefined();
    // Depth 1: no grandchildren read.
    expect((await sessionChildren(load, P))[0]?.children).toBeUndefined();

    // The approvals of the parent and every created descendant, oldest first, each on its own session.
    const asked = (sessionId: string, requestedAt: number) => ({
      sessionId,
      toolCallId: `t-${sessionId}`,
      toolName: "bash",
      args: {},
      seq: 1,
      requestedAt,
    });
    const pending = new Map([
      [g1, [asked(g1, 5)]],
      [c2, [asked(c2, 9)]],
      [P, [asked(P, 7)]],
    ]);
    const listed: string[] = [];
    const list = async (id: string) => {
      listed.push(id);
      return pending.get(id) ?? [];
    };
    const approvals = await approvalsWithDescendants(list, load, P);
    expect(approvals.map((a) => a.sessionId)).toEqual([g1, P, c2]);
    // The pending child c3 (no log) is not asked.
    expect(listed.sort()).toEqual([P, c1, c2, g1].sort());
  });
});
