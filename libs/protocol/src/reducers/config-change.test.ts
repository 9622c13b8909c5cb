import { describe, expect, it } from "vitest";
import type { FleetEvent, SessionConfig } from "../index.js";
import { emptySessionTree, foldAgentEvents, foldSessionTreeEvents } from "../index.js";

const config: SessionConfig = {
  model: { provider: "anthropic", modelId: "claude-sonnet-5" },
  thinkingLevel: "off",
  systemPrompt: "be brief",
  activeTools: null,
  steeringMode: "one-at-a-time",
  followUpMode: "one-at-a-time",
  toolExecution: "parallel",
};
const meta = (id: string) => ({ v: 1 as const, id, sessionId: "s-1", ts: 1, producer: "t" });
const events: FleetEvent[] = [
  { type: "session_created", config, meta: meta("e1") },
  { type: "config_change", systemPrompt: "be thorough", toolExecution: "sequential", meta: meta("e2") },
  { type: "config_change", steeringMode: "all", meta: meta("e3") },
];

describe("config_change", () => {
  it("replaces only the fields present, in the tree and in the agent state", () => {
    const tree = foldSessionTreeEvents(events, emptySessionTree());
    expect(tree.config).toEqual({
      ...config,
      systemPrompt: "be thorough",
      toolExecution: "sequential",
      steeringMode: "all",
    });
    const state = foldAgentEvents(events);
    expect([state.systemPrompt, state.toolExecution, state.steeringMode, state.followUpMode]).toEqual([
      "be thorough",
      "sequential",
      "all",
      "one-at-a-time",
    ]);
  });

  it("is a no-op when applied again", () => {
    const once = foldSessionTreeEvents(events, emptySessionTree());
    expect(foldSessionTreeEvents(events.slice(1), once)).toBe(once);
  });
});
