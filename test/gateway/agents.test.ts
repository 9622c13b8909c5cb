// Agents as named, versioned definitions (PROTOCOL "Agents") against the real stack (nats-server,
// redis-server, loop, store, tool runner, gateway; only the LLM is faked): written over HTTP, the
// SDK and the CLI; sessions created from a version run its settings; `set_agent` during a run moves
// the session at its next turn boundary; the store counts the sessions of each version.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CommandRejectedError } from "@fleet/client";
import type { FleetEvent } from "@fleet/protocol";
import { fakeReply, fakeText, fakeToolUse } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, fleetCliOf, type GatewayStack, startGatewayStack, waitIdle } from "./support.js";

let stack: GatewayStack;
let base: string;
let dir: string;

beforeAll(async () => {
  stack = await startGatewayStack({ approvalTools: ["write"] });
  base = stack.gateway.url;
  dir = mkdtempSync(join(tmpdir(), "fleet-agents-"));
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const V1 = {
  model: { provider: "anthropic", modelId: "claude-agent-v1" },
  systemPrompt: "You are support v1.",
  thinkingLevel: "low",
  approvalRules: [{ tool: "bash", action: "deny", reason: "no shell for support" }],
};
const V2 = { model: { provider: "anthropic", modelId: "claude-agent-v2" }, systemPrompt: "You are support v2." };

async function eventsOf(sessionId: string, until: (e: FleetEvent) => boolean): Promise<FleetEvent[]> {
  const events: FleetEvent[] = [];
  for await (const item of stack.client.events(sessionId, { signal: AbortSignal.timeout(15_000) })) {
    events.push(item.event);
    if (until(item.event)) break;
  }
  return events;
}

/** The versions of `name` with their session counts, once the store shows `expected`. */
async function countsBecome(name: string, expected: Record<number, number>) {
  await expect
    .poll(
      async () => {
        const got = await call(base, "GET", `/v1/agents/${name}`);
        return Object.fromEntries(
          (got.body.versions as Array<{ version: number; sessions: number }>).map((v) => [v.version, v.sessions]),
        );
      },
      { timeout: 15_000 },
    )
    .toEqual(expected);
}

describe("agents / HTTP", () => {
  it("creates version 1, writes version 2, reads both; a version is never replaced", async () => {
    const created = await call(base, "POST", "/v1/agents", { body: { name: "support", settings: V1 } });
    expect([created.status, created.body]).toEqual([
      201,
      { name: "support", version: 1, settings: V1, createdAt: expect.any(Number) },
    ]);
    const again = await call(base, "POST", "/v1/agents", { body: { name: "support", settings: V2 } });
    expect([again.status, again.body.error.code]).toEqual([409, "conflict"]);
    const v2 = await call(base, "POST", "/v1/agents/support/versions", {
      body: { settings: V2, description: "new prompt" },
    });
    expect([v2.status, v2.body.version, v2.body.description]).toEqual([201, 2, "new prompt"]);

    const one = await call(base, "GET", "/v1/agents/support/versions/1");
    expect([one.status, one.body.settings, one.body.sessions]).toEqual([200, V1, 0]);
    const all = await call(base, "GET", "/v1/agents/support");
    expect(all.body.latest).toBe(2);
    expect(all.body.versions.map((v: { version: number }) => v.version)).toEqual([1, 2]);
    const list = await call(base, "GET", "/v1/agents");
    expect(list.body.agents).toContainEqual({ name: "support", latest: 2, updatedAt: expect.any(Number), sessions: 0 });
  });

  it("answers 404 for a missing agent or version, 400 for bad settings or names", async () => {
    expect((await call(base, "GET", "/v1/agents/nobody")).status).toBe(404);
    expect((await call(base, "GET", "/v1/agents/support/versions/99")).status).toBe(404);
    expect((await call(base, "POST", "/v1/agents/nobody/versions", { body: { settings: {} } })).status).toBe(404);
    const bad = await call(base, "POST", "/v1/agents", {
      body: { name: "x", settings: { thinkingLevel: "enormous" } },
    });
    expect([bad.status, bad.body.error.code]).toEqual([400, "invalid"]);
    const unknown = await call(base, "POST", "/v1/agents", { body: { name: "x", settings: { colour: "red" } } });
    expect(unknown.status).toBe(400);
    expect((await call(base, "POST", "/v1/agents", { body: { name: "a.b", settings: {} } })).status).toBe(400);
  });

  it("creates sessions from the latest (pinned) and from name@version; a missing one is 404", async () => {
    const latest = await call(base, "POST", "/v1/sessions", { body: { agent: "support" } });
    const pinned = await call(base, "POST", "/v1/sessions", { body: { agent: "support@1" } });
    expect([latest.status, pinned.status]).toEqual([201, 201]);
    const [createdLatest] = (await eventsOf(latest.body.sessionId, (e) => e.type === "session_created")).filter(
      (e) => e.type === "session_created",
    );
    expect(createdLatest).toMatchObject({
      agent: { name: "support", version: 2 },
      config: { model: V2.model, systemPrompt: V2.systemPrompt },
    });
    const pinnedEvents = await eventsOf(pinned.body.sessionId, (e) => e.type === "agent_change");
    expect(pinnedEvents.find((e) => e.type === "session_created")).toMatchObject({
      agent: { name: "support", version: 1 },
      config: { model: V1.model, systemPrompt: V1.systemPrompt, thinkingLevel: "low" },
    });
    expect(pinnedEvents.at(-1)).toMatchObject({
      type: "agent_change",
      agent: { name: "support", version: 1 },
      approvalRules: V1.approvalRules,
    });

    // A version written later does not move a session created from `support`: it was pinned.
    await call(base, "POST", "/v1/agents/support/versions", { body: { settings: { systemPrompt: "v3" } } });
    stack.fake.script(fakeReply("hello from v2"));
    await call(base, "POST", `/v1/sessions/${latest.body.sessionId}/commands`, {
      body: { type: "prompt", text: "hi" },
    });
    await waitIdle(stack.client, latest.body.sessionId, 2);
    const request = stack.fake.requests.at(-1)?.body;
    expect(request?.model).toBe("claude-agent-v2");
    expect(JSON.stringify(request?.system)).toContain("You are support v2.");

    const missing = await call(base, "POST", "/v1/sessions", { body: { agent: "support@42" } });
    expect([missing.status, missing.body.error.code, missing.body.error.message]).toEqual([
      404,
      "not_found",
      "Agent support@42 not found",
    ]);
    await countsBecome("support", { 1: 1, 2: 1, 3: 0 });
    const listed = await call(base, "GET", "/v1/sessions?limit=100");
    expect(listed.body.sessions).toContainEqual(
      expect.objectContaining({ sessionId: pinned.body.sessionId, agent: { name: "support", version: 1 } }),
    );
  });
});

describe("agents / approval rules", () => {
  it("a version's rules apply to its sessions (scope agent_version), apart from the session's own", async () => {
    const created = await call(base, "POST", "/v1/sessions", { body: { agent: "support@1" } });
    const sessionId = created.body.sessionId as string;
    stack.fake.script(
      fakeReply([fakeText("Listing."), fakeToolUse("bash", { command: "ls" }, { id: "toolu_denied" })]),
      fakeReply("Could not."),
    );
    await call(base, "POST", `/v1/sessions/${sessionId}/commands`, { body: { type: "prompt", text: "list" } });
    const events = await eventsOf(sessionId, (e) => e.type === "agent_end");
    const end = events.find((e) => e.type === "tool_execution_end");
    expect(end).toMatchObject({ toolCallId: "toolu_denied", isError: true });
    expect(JSON.stringify(end)).toContain("no shell for support");
    expect((await call(base, "GET", `/v1/sessions/${sessionId}/approval-rules`)).body).toEqual({ rules: [] });
  }, 60_000);
});

describe("agents / set_agent", () => {
  it("moves a session during a run at its next turn boundary: the next LLM call runs the new version", async () => {
    await call(base, "POST", "/v1/agents", { body: { name: "mover", settings: V1 } });
    await call(base, "POST", "/v1/agents/mover/versions", { body: { settings: V2 } });
    const created = await call(base, "POST", "/v1/sessions", { body: { agent: "mover@1" } });
    const sessionId = created.body.sessionId as string;
    stack.fake.script(
      fakeReply([fakeText("Writing."), fakeToolUse("write", { path: "a.txt", content: "a\n" }, { id: "toolu_mv" })]),
      fakeReply("Done."),
    );
    await call(base, "POST", `/v1/sessions/${sessionId}/commands`, { body: { type: "prompt", text: "write a" } });
    // The run waits at the approval gate of `write`: a turn is open.
    await eventsOf(sessionId, (e) => e.type === "tool_approval_requested");
    const moved = await call(base, "POST", `/v1/sessions/${sessionId}/commands`, {
      body: { type: "set_agent", agent: "mover@2" },
    });
    expect(moved.body.event).toMatchObject({ type: "command_accepted", commandType: "set_agent" });
    await stack.client.approveToolCall(sessionId, "toolu_mv");
    await waitIdle(stack.client, sessionId, 4);

    const events = await eventsOf(sessionId, (e) => e.type === "agent_end");
    const types = events.map((e) => e.type);
    const accepted = types.findIndex(
      (t, i) => t === "command_accepted" && (events[i] as { commandType?: string }).commandType === "set_agent",
    );
    const firstTurnEnd = types.indexOf("turn_end");
    // The first agent_change is the one of creation (v1's approval rules); the move's comes after.
    const change = types.indexOf("agent_change", accepted);
    // Accepted mid-turn as pending writes; carried out after the turn ended, before the next turn.
    expect(types.slice(accepted + 1, accepted + 3)).toEqual(["pending_write", "pending_write"]);
    expect(accepted).toBeLessThan(firstTurnEnd);
    expect(change).toBeGreaterThan(firstTurnEnd);
    expect(types.indexOf("turn_start", firstTurnEnd)).toBeGreaterThan(change);
    expect(events[change]).toMatchObject({ agent: { name: "mover", version: 2 }, systemPrompt: V2.systemPrompt });
    const second = stack.fake.requests.at(-1)?.body;
    expect(second?.model).toBe("claude-agent-v2");
    expect(JSON.stringify(second?.system)).toContain("You are support v2.");
    await countsBecome("mover", { 1: 0, 2: 1 });
    const state = await call(base, "GET", `/v1/sessions/${sessionId}`);
    expect([state.body.agent, state.body.systemPrompt]).toEqual([{ name: "mover", version: 2 }, V2.systemPrompt]);
  }, 60_000);

  it("refuses a version that does not exist (command_rejected not_found)", async () => {
    const created = await call(base, "POST", "/v1/sessions", { body: {} });
    const error = await stack.client.setAgent(created.body.sessionId, "mover@9").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandRejectedError);
    expect([(error as CommandRejectedError).code, (error as CommandRejectedError).reason]).toEqual([
      "not_found",
      "Agent mover@9 not found",
    ]);
  });
});

describe("agents / SDK", () => {
  it("concurrent updates each get their own version: none lost, none duplicated", async () => {
    await stack.client.agents.create("busy", { settings: {} });
    const writers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        stack.client.agents.update("busy", { settings: { systemPrompt: `writer ${i}` } }),
      ),
    );
    expect(writers.map((v) => v.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 2));
    const shown = await stack.client.agents.show("busy");
    expect(shown.latest).toBe(13);
    const prompts = shown.versions.slice(1).map((v) => v.settings.systemPrompt);
    expect(new Set(prompts).size).toBe(12);
    expect((await stack.client.agents.get("busy")).version).toBe(13);
    const duplicate = await stack.client.agents.create("busy", { settings: {} }).catch((e: unknown) => e);
    expect(duplicate).toMatchObject({ kind: "rejected", code: "conflict" });
  });

  it("creates a session from an agent and counts it; deleting the session takes it out of the count", async () => {
    await stack.client.agents.create("counted", { settings: { systemPrompt: "count me" } });
    const a = await stack.client.createSession({}, { agent: "counted" });
    const b = await stack.client.createSession({}, { agent: "counted@1" });
    await expect
      .poll(async () => (await stack.client.countAgentSessions("counted")).counts, { timeout: 15_000 })
      .toEqual([{ name: "counted", version: 1, sessions: 2 }]);
    await stack.client.deleteSession(b.sessionId);
    await expect
      .poll(async () => (await stack.client.countAgentSessions("counted")).counts, { timeout: 15_000 })
      .toEqual([{ name: "counted", version: 1, sessions: 1 }]);
    expect(a.sessionId).not.toBe(b.sessionId);
  });
});

describe("agents / CLI", () => {
  it("fleet agent create, update, show, list, new and set", async () => {
    const fleet = fleetCliOf(stack, dir);
    const created = await fleet([
      "agent",
      "create",
      "cli-agent",
      "--model",
      "anthropic/claude-cli",
      "--system-prompt",
      "From the CLI.",
      "--tools",
      "read,write",
    ]);
    expect([created.code, created.stdout]).toEqual([0, "✓ cli-agent@1 written\n"]);
    const updated = await fleet(["agent", "update", "cli-agent", "--thinking", "high", "--json"]);
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({
      name: "cli-agent",
      version: 2,
      settings: { thinkingLevel: "high" },
    });
    const again = await fleet(["agent", "create", "cli-agent"]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("Agent cli-agent already exists");

    const session = await fleet(["agent", "new", "cli-agent@1"]);
    expect(session.code).toBe(0);
    const sessionId = session.stdout.trim();
    const shown = await fleet(["agent", "show", "cli-agent", "--json"]);
    expect(JSON.parse(shown.stdout).versions.map((v: { version: number; sessions: number }) => v.sessions)).toEqual([
      1, 0,
    ]);
    const text = await fleet(["agent", "show", "cli-agent"]);
    expect(text.stdout).toContain("v1");
    expect(text.stdout).toContain("anthropic/claude-cli");
    expect(text.stdout).toContain("1 session(s)");

    const set = await fleet(["agent", "set", sessionId, "cli-agent@2"]);
    expect([set.code, set.stdout]).toEqual([0, expect.stringContaining(`${sessionId} moves to cli-agent@2`)]);
    await countsBecome("cli-agent", { 1: 0, 2: 1 });
    const list = await fleet(["agent", "list"]);
    expect(list.stdout).toMatch(/cli-agent\s+v2\s+\S+\s+1 session\(s\)/);
    const missing = await fleet(["agent", "set", sessionId, "cli-agent@7"]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("Agent cli-agent@7 not found");
  }, 120_000);
});
