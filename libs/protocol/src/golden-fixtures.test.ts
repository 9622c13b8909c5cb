// Golden event logs (fixtures/*.jsonl, pi-semantics §10b): they must decode, re-encode to the same
// bytes, follow pi's event order, and fold to the state pi's Agent would hold.
// biome-ignore lint/style/noRestrictedImports: the test reads the golden files from disk
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { decodeEvent, encodeEvent } from "./codec.js";
import type { FleetEvent } from "./events.js";
import { ENTRY_EVENT_TYPES } from "./events.js";
import type { ContextMessage } from "./messages.js";
import { type AgentState, foldAgentEvents, foldAgentState, initialAgentState } from "./reducers/agent-state.js";
import { findRunCursor } from "./reducers/run-cursor.js";
import { buildContext, foldSessionTreeEvents, getTree } from "./reducers/session-tree.js";

const FIXTURES = new URL("../fixtures/", import.meta.url);

function load(name: string): { lines: string[]; events: FleetEvent[] } {
  const lines = readFileSync(new URL(`${name}.jsonl`, FIXTURES), "utf8")
    .split("\n")
    .filter(Boolean);
  const events = lines.map((line, i) => {
    const decoded = decodeEvent(line);
    if (!decoded.ok) throw new Error(`${name}.jsonl line ${i + 1}: ${decoded.error}`);
    return decoded.value;
  });
  return { lines, events };
}

const short = (id: string) => id.replace(/^toolu_/, "");
/** pi-semantics §10b notation; message_update and session events are left out. */
function notation(events: FleetEvent[]): string {
  const out: string[] = [];
  for (const e of events) {
    switch (e.type) {
      case "agent_start":
      case "turn_start":
        out.push(e.type);
        break;
      case "message_start":
      case "message_end": {
        const m = e.message;
        const prefix = e.type === "message_start" ? "ms" : "me";
        if (m.role === "toolResult") out.push(`${prefix}:toolResult(${short(m.toolCallId)}${m.isError ? ",err" : ""})`);
        else if (m.role === "assistant" && e.type === "message_end") out.push(`me:assistant(${m.stopReason})`);
        else out.push(`${prefix}:${m.role}`);
        break;
      }
      case "tool_execution_start":
        out.push(`tool_start:${short(e.toolCallId)}`);
        break;
      case "tool_execution_update":
        out.push(`tool_update:${short(e.toolCallId)}`);
        break;
      case "tool_execution_end":
        out.push(`tool_end:${short(e.toolCallId)}${e.isError ? "(err)" : ""}`);
        break;
      case "turn_end":
        out.push(`turn_end[${e.toolResults.map((r) => short(r.toolCallId)).join(",")}]`);
        break;
      case "agent_end":
        out.push(`agent_end(${e.messages.length})`);
        break;
      default:
        break;
    }
  }
  return out.join(" ");
}

/** `role(detail)` per message: assistant → stopReason, toolResult → call id (+err). */
function transcript(messages: readonly ContextMessage[]): string {
  return messages
    .map((m) => {
      if (m.role === "assistant") return `assistant(${m.stopReason})`;
      if (m.role === "toolResult") return `toolResult(${short(m.toolCallId)}${m.isError ? ",err" : ""})`;
      return m.role;
    })
    .join(" ");
}

const PROMPT = "agent_start turn_start ms:user me:user ms:assistant";
const FINAL_TURN = "turn_start ms:assistant me:assistant(stop) turn_end[]";

interface Expected {
  sequence: string;
  transcript: string;
  errorMessage?: string;
}

const EXPECTED: Record<string, Expected> = {
  "plain-prompt": {
    sequence: `${PROMPT} me:assistant(stop) turn_end[] agent_end(2)`,
    transcript: "user assistant(stop)",
  },
  "parallel-tools": {
    sequence: `${PROMPT} me:assistant(toolUse) tool_start:t1 tool_start:t2 tool_update:t1 tool_update:t2 tool_end:t2 tool_end:t1 ms:toolResult(t1) me:toolResult(t1) ms:toolResult(t2) me:toolResult(t2) turn_end[t1,t2] ${FINAL_TURN} agent_end(5)`,
    transcript: "user assistant(toolUse) toolResult(t1) toolResult(t2) assistant(stop)",
  },
  "sequential-tools": {
    sequence: `${PROMPT} me:assistant(toolUse) tool_start:t1 tool_update:t1 tool_end:t1 ms:toolResult(t1) me:toolResult(t1) tool_start:t2 tool_update:t2 tool_end:t2 ms:toolResult(t2) me:toolResult(t2) turn_end[t1,t2] ${FINAL_TURN} agent_end(5)`,
    transcript: "user assistant(toolUse) toolResult(t1) toolResult(t2) assistant(stop)",
  },
  "tool-errors": {
    sequence: `${PROMPT} me:assistant(toolUse) tool_start:t1 tool_start:t2 tool_end:t2(err) tool_start:t3 tool_end:t3(err) tool_end:t1(err) ms:toolResult(t1,err) me:toolResult(t1,err) ms:toolResult(t2,err) me:toolResult(t2,err) ms:toolResult(t3,err) me:toolResult(t3,err) turn_end[t1,t2,t3] ${FINAL_TURN} agent_end(6)`,
    transcript: "user assistant(toolUse) toolResult(t1,err) toolResult(t2,err) toolResult(t3,err) assistant(stop)",
  },
  "tool-blocked": {
    sequence: `${PROMPT} me:assistant(toolUse) tool_start:t1 tool_start:t2 tool_end:t2(err) tool_end:t1 ms:toolResult(t1) me:toolResult(t1) ms:toolResult(t2,err) me:toolResult(t2,err) turn_end[t1,t2] ${FINAL_TURN} agent_end(5)`,
    transcript: "user assistant(toolUse) toolResult(t1) toolResult(t2,err) assistant(stop)",
  },
  "llm-error": {
    sequence: `${PROMPT} me:assistant(error) turn_end[] agent_end(2)`,
    transcript: "user assistant(error)",
    errorMessage: '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
  },
  "abort-mid-stream": {
    sequence: `${PROMPT} me:assistant(aborted) turn_end[] agent_end(2)`,
    transcript: "user assistant(aborted)",
    errorMessage: "Request was aborted",
  },
  "abort-mid-tool": {
    sequence: `${PROMPT} me:assistant(toolUse) tool_start:t1 tool_start:t2 tool_end:t1 tool_end:t2(err) ms:toolResult(t1) me:toolResult(t1) ms:toolResult(t2,err) me:toolResult(t2,err) turn_end[t1,t2] agent_end(4)`,
    transcript: "user assistant(toolUse) toolResult(t1) toolResult(t2,err)",
  },
  "abort-mid-tool-pi": {
    sequence: `${PROMPT} me:assistant(toolUse) tool_start:t1 tool_end:t1(err) ms:toolResult(t1,err) me:toolResult(t1,err) turn_end[t1] turn_start ms:assistant me:assistant(aborted) turn_end[] agent_end(4)`,
    transcript: "user assistant(toolUse) toolResult(t1,err) assistant(aborted)",
    errorMessage: "Request was aborted",
  },
  steering: {
    sequence: `${PROMPT} me:assistant(toolUse) tool_start:t1 tool_start:t2 tool_end:t2 tool_end:t1 ms:toolResult(t1) me:toolResult(t1) ms:toolResult(t2) me:toolResult(t2) turn_end[t1,t2] ${Array(4).fill("turn_start ms:user me:user ms:assistant me:assistant(stop) turn_end[]").join(" ")} agent_end(12)`,
    transcript: `user assistant(toolUse) toolResult(t1) toolResult(t2) ${Array(4).fill("user assistant(stop)").join(" ")}`,
  },
};

describe("golden fixtures / wire format", () => {
  for (const name of [...Object.keys(EXPECTED), "tree-branch-compaction"]) {
    it(`${name}: every line decodes, re-encodes to the same bytes, and carries consistent meta`, () => {
      const { lines, events } = load(name);
      const decoder = new TextDecoder();
      events.forEach((event, i) => {
        const encoded = encodeEvent(event);
        expect(encoded.ok && decoder.decode(encoded.bytes)).toBe(lines[i]);
      });
      expect(new Set(events.map((e) => e.meta.id)).size).toBe(events.length);
      expect(new Set(events.map((e) => e.meta.sessionId))).toEqual(new Set(["s-1"]));
      const ts = events.map((e) => e.meta.ts);
      expect(ts).toEqual([...ts].sort((x, y) => x - y));
      // runId on every event from agent_start through agent_end, and nowhere else
      let runId: string | undefined;
      let leaf: string | null = null;
      for (const e of events) {
        if (e.type === "agent_start") runId = e.meta.runId;
        expect(e.meta.runId).toBe(runId);
        if (e.type === "agent_end") runId = undefined;
        if ((ENTRY_EVENT_TYPES as readonly string[]).includes(e.type)) {
          expect("entry" in e && e.entry).toEqual({ id: e.meta.id, parentId: leaf });
          leaf = e.meta.id;
        } else expect("entry" in e).toBe(false);
        if (e.type === "leaf") leaf = e.targetId;
      }
    });
  }
});

describe("golden fixtures / pi's order and final agent state", () => {
  for (const [name, expected] of Object.entries(EXPECTED)) {
    it(`${name}: follows pi's sequence and folds to pi's final state`, () => {
      const { events } = load(name);
      expect(notation(events)).toBe(expected.sequence);
      const state = foldAgentEvents(events);
      const agentEnd = events.findLast((e) => e.type === "agent_end");
      expect(agentEnd?.type === "agent_end" && state.messages).toEqual(
        agentEnd?.type === "agent_end" && agentEnd.messages,
      );
      expect(transcript(state.messages)).toBe(expected.transcript);
      expect(state.isStreaming).toBe(false);
      expect(state.streamingMessage).toBeUndefined();
      expect(state.pendingToolCalls.size).toBe(0);
      expect(state.errorMessage).toBe(expected.errorMessage);
      expect(state.queues).toEqual({ steer: [], followUp: [], nextTurn: [] });
      expect(state.runId).toBeUndefined();
      // the session tree holds the same transcript as one linear branch
      const tree = foldSessionTreeEvents(events);
      const ctx = buildContext(tree);
      expect(ctx.ok && ctx.messages).toEqual(state.messages);
      expect(findRunCursor(events)).toMatchObject({ kind: "idle" });
    });
  }

  it("abort-mid-stream: the streaming message holds the partial text until message_end", () => {
    const { events } = load("abort-mid-stream");
    const states: AgentState[] = [];
    events.reduce((s, e) => {
      const next = foldAgentState(s, e);
      states.push(next);
      return next;
    }, initialAgentState());
    const end = events.findIndex((e) => e.type === "message_end" && e.message.role === "assistant");
    const partial = states[end - 1]?.streamingMessage;
    expect(partial?.role === "assistant" && partial.content).toEqual([{ type: "text", text: "Once upon a time" }]);
    expect(states[end - 1]?.isStreaming).toBe(true);
  });

  it("steering: queues fill during the batch and drain one message per turn", () => {
    const { events } = load("steering");
    const firstText = (m: ContextMessage) =>
      m.role === "user" && typeof m.content !== "string" && m.content[0]?.type === "text" ? m.content[0].text : "?";
    const queueStates: string[] = [];
    let state = initialAgentState();
    for (const e of events) {
      state = foldAgentState(state, e);
      if (e.type === "queue_update") {
        queueStates.push(
          `${state.queues.steer.map(firstText).join(",")}|${state.queues.followUp.map(firstText).join(",")}`,
        );
      }
    }
    expect(queueStates).toEqual(["S1|", "S1,S2|", "S1,S2|F1", "S1,S2|F1,F2", "S2|F1,F2", "|F1,F2", "|F2", "|"]);
    expect(state.messages.filter((m) => m.role === "user").map(firstText)).toEqual([
      "Run both tools",
      "S1",
      "S2",
      "F1",
      "F2",
    ]);
  });
});

describe("golden fixtures / tree-branch-compaction", () => {
  const { events } = load("tree-branch-compaction");
  const tree = foldSessionTreeEvents(events);

  it("projects the tree: entries, branches, labels, name, leaf", () => {
    const view = getTree(tree);
    expect(view.entries.length).toBe(
      events.filter((e) => (ENTRY_EVENT_TYPES as readonly string[]).includes(e.type)).length,
    );
    expect(view.roots).toHaveLength(1);
    const branching = Object.values(view.children).filter((c) => c.length > 1);
    expect(branching).toHaveLength(1); // A1 has two children: the model_change and the branch summary
    expect(Object.values(tree.labels)).toEqual(["checkpoint"]);
    expect(tree.name).toBe("Tree demo");
    const lastEntry = events.findLast((e) => e.type === "message_end");
    expect(tree.leafId).toBe(lastEntry?.meta.id); // A5; turn_end and agent_end create no entry
  });

  it("builds pi's context: compaction summary, kept turns, later turns; path settings only", () => {
    const ctx = buildContext(tree);
    expect(ctx.ok && ctx.thinkingLevel).toBe("high");
    expect(ctx.ok && ctx.model).toEqual({ provider: "anthropic", modelId: "claude-sonnet-4-5" });
    const text = (m: ContextMessage) =>
      m.role === "compactionSummary"
        ? `summary:${m.summary}`
        : m.role === "user" || m.role === "assistant"
          ? (m.content as Array<{ text?: string }>).map((b) => b.text).join("")
          : m.role;
    expect(ctx.ok && ctx.messages.map(text)).toEqual([
      "summary:## Goal\nAnswer Q1 and Q3.",
      "Q3",
      "A3",
      "Q4",
      "A4",
      "Q5",
      "A5",
    ]);
  });
});
