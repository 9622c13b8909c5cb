import { CommandRejectedError, FleetClient, type FleetError, isFleetError, type SessionEventItem } from "@fleet/client";
import type { NatsServer } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLoop, type FakeLoopServer, startFakeLoopServer } from "./support/fake-loop.js";

let server: NatsServer;
let stack: FakeLoopServer;
let loop: FakeLoop;
let client: FleetClient;

beforeAll(async () => {
  stack = await startFakeLoopServer();
  ({ server, loop } = stack);
  client = await FleetClient.connect({ natsUrl: server.url, commandTimeoutMs: 10_000 });
});

afterAll(async () => {
  await client?.close();
  await stack?.stop();
});

async function collect(sessionId: string, from: number, until: (item: SessionEventItem) => boolean) {
  const items: SessionEventItem[] = [];
  for await (const item of client.events(sessionId, { from })) {
    items.push(item);
    if (until(item)) break;
  }
  return items;
}

describe("client / connect", () => {
  it("reads the partition count from KV fleet_config", () => {
    expect(client.partitions).toBe(4);
  });

  it("fails with one clear unavailable error when NATS cannot be reached", async () => {
    const error = await FleetClient.connect({ natsUrl: "nats://127.0.0.1:1", connectTimeoutMs: 1_000 }).catch(
      (e: unknown) => e,
    );
    expect(isFleetError(error)).toBe(true);
    expect((error as FleetError).kind).toBe("unavailable");
    expect((error as FleetError).message).toMatch(/^cannot reach NATS at nats:\/\/127\.0\.0\.1:1 /);
  });
});

describe("client / commands", () => {
  it("resolves createSession on command_accepted, with the accepted event's sequence", async () => {
    const created = await client.createSession({ thinkingLevel: "high" }, { sessionId: "s-create-1" });
    const items = await collect("s-create-1", 1, (i) => i.event.type === "session_created");
    expect(items.map((i) => i.event.type)).toEqual(["command_accepted", "session_created"]);
    expect(created).toEqual({
      sessionId: "s-create-1",
      commandId: loop.commands.at(-1)?.id,
      commandType: "create_session",
      seq: items[0]?.seq,
    });
    expect(loop.commands.at(-1)).toMatchObject({ type: "create_session", config: { thinkingLevel: "high" } });
  });

  it("rejects with the code and reason of command_rejected", async () => {
    await client.createSession({}, { sessionId: "s-reject-1" });
    const error = await client.createSession({}, { sessionId: "s-reject-1" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandRejectedError);
    const rejected = error as CommandRejectedError;
    expect([rejected.kind, rejected.code, rejected.reason, rejected.commandType]).toEqual([
      "rejected",
      "conflict",
      "session exists",
      "create_session",
    ]);
    expect(rejected.message).toBe("create_session rejected (conflict): session exists");

    const prompt = await client.prompt("s-reject-1", "reject me").catch((e: unknown) => e);
    expect([(prompt as CommandRejectedError).code, (prompt as CommandRejectedError).reason]).toEqual([
      "invalid",
      "rejected on request",
    ]);
  });

  it("times out with a clear error when no outcome arrives", async () => {
    const error = await client.prompt("s-silent-1", "say nothing", { timeoutMs: 800 }).catch((e: unknown) => e);
    expect(isFleetError(error)).toBe(true);
    expect((error as FleetError).kind).toBe("timeout");
    expect((error as FleetError).message).toMatch(
      /^no outcome for prompt [0-9a-f-]{36} on session s-silent-1 within 800 ms; is a loop worker running\?/,
    );
  });

  it("times out at once with timeoutMs 0, even when the wait ends while the tail is being set up", async () => {
    for (let i = 0; i < 20; i++) {
      const error = await client.prompt("s-silent-0", "say nothing", { timeoutMs: 0 }).catch((e: unknown) => e);
      expect((error as FleetError).kind).toBe("timeout");
    }
  });

  it("outcomeOf answers a rejection as data, with its sequence", async () => {
    await client.createSession({}, { sessionId: "s-outcome-1" });
    const outcome = await client.outcomeOf("s-outcome-1", { type: "create_session" });
    expect(outcome.event).toMatchObject({ type: "command_rejected", code: "conflict", commandType: "create_session" });
    const items = await collect("s-outcome-1", outcome.seq, () => true);
    expect(items[0]?.event).toEqual(outcome.event);
  });

  it("publishes each command with its documented payload", async () => {
    const sid = "s-payloads-1";
    await client.steer(sid, "left");
    await client.followUp(sid, { text: "then this" });
    await client.nextTurn(sid, "later");
    await client.continue(sid);
    await client.abort(sid);
    await client.setModel(sid, { provider: "anthropic", modelId: "claude-x" });
    await client.setThinkingLevel(sid, "low");
    await client.setActiveTools(sid, ["read", "ls"]);
    await client.configure(sid, { steeringMode: "all" });
    await client.compact(sid, "keep it short");
    await client.navigate(sid, null);
    await client.label(sid, "e1", "checkpoint");
    await client.setName(sid, "payloads");
    await client.appendCustom(sid, "note", { a: 1 });
    await client.approveToolCall(sid, "call_1");
    await client.denyToolCall(sid, "call_2", "no");
    const sent = loop.commands.filter((c) => c.sessionId === sid).map(({ id: _id, ts: _ts, ...rest }) => rest);
    expect(sent).toEqual([
      { type: "steer", sessionId: sid, text: "left" },
      { type: "follow_up", sessionId: sid, text: "then this" },
      { type: "next_turn", sessionId: sid, text: "later" },
      { type: "continue", sessionId: sid },
      { type: "abort", sessionId: sid },
      { type: "set_model", sessionId: sid, provider: "anthropic", modelId: "claude-x" },
      { type: "set_thinking_level", sessionId: sid, level: "low" },
      { type: "set_active_tools", sessionId: sid, toolNames: ["read", "ls"] },
      { type: "configure", sessionId: sid, steeringMode: "all" },
      { type: "compact", sessionId: sid, instructions: "keep it short" },
      { type: "navigate", sessionId: sid, targetId: null },
      { type: "label", sessionId: sid, targetId: "e1", label: "checkpoint" },
      { type: "set_name", sessionId: sid, name: "payloads" },
      { type: "append_custom", sessionId: sid, customType: "note", data: { a: 1 } },
      { type: "approve_tool_call", sessionId: sid, toolCallId: "call_1" },
      { type: "deny_tool_call", sessionId: sid, toolCallId: "call_2", reason: "no" },
    ]);
  });

  it("fork sends create_session with forkFrom to a new session", async () => {
    const forked = await client.fork("s-create-1", "entry-42", { sessionId: "s-fork-1" });
    expect(forked.sessionId).toBe("s-fork-1");
    const command = loop.commands.find((c) => c.sessionId === "s-fork-1");
    expect(command).toEqual({
      type: "create_session",
      id: forked.commandId,
      sessionId: "s-fork-1",
      ts: command?.ts,
      config: {},
      forkFrom: { sessionId: "s-create-1", entryId: "entry-42" },
    });
  });

  it("refuses an invalid command before sending it", async () => {
    const error = await client.setActiveTools("s-x", ["bad tool name"]).catch((e: unknown) => e);
    expect([(error as FleetError).kind, (error as FleetError).code]).toEqual(["invalid_input", "invalid"]);
    expect(loop.commands.some((c) => c.sessionId === "s-x")).toBe(false);
  });
});
