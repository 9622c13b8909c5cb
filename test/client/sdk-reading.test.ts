import { FleetClient, type SessionEventItem } from "@fleet/client";
import { partitionOf, subjects } from "@fleet/protocol";
import { connectNats } from "@fleet/runtime";
import type { NatsServer } from "@fleet/testkit";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAKE_RUN_TYPES, type FakeLoopServer, startFakeLoopServer } from "./support/fake-loop.js";

let server: NatsServer;
let stack: FakeLoopServer;
let client: FleetClient;

beforeAll(async () => {
  stack = await startFakeLoopServer();
  ({ server } = stack);
  client = await FleetClient.connect({ natsUrl: server.url, commandTimeoutMs: 10_000 });
});

afterAll(async () => {
  await client?.close();
  await stack?.stop();
});

async function take(sessionId: string, from: number | "start" | "new", count: number) {
  const items: SessionEventItem[] = [];
  for await (const item of client.events(sessionId, { from })) {
    items.push(item);
    if (items.length === count) break;
  }
  return items;
}

/** Prompts and waits for the run's agent_end (a command resolves on command_accepted, before its run). */
async function promptAndWait(sessionId: string, text: string) {
  const accepted = await client.prompt(sessionId, text);
  for await (const item of client.events(sessionId, { from: accepted.seq })) {
    if (item.event.type === "agent_end") return { accepted, endSeq: item.seq };
  }
  throw new Error("events ended");
}

describe("client / events", () => {
  it("delivers a session's events in stream order from the start and from a sequence", async () => {
    const accepted = await client.prompt("s-ev-1", "hello");
    const all = await take("s-ev-1", "start", FAKE_RUN_TYPES.length);
    expect(all.map((i) => i.event.type)).toEqual(FAKE_RUN_TYPES);
    expect(all[0]?.seq).toBe(accepted.seq);
    const tail = await take("s-ev-1", all[7]?.seq ?? 0, 5);
    expect(tail.map((i) => i.seq)).toEqual(all.slice(7).map((i) => i.seq));
  });

  it("from: new delivers only events appended after the call", async () => {
    await promptAndWait("s-ev-2", "first");
    const iterator = client.events("s-ev-2", { from: "new" })[Symbol.asyncIterator]();
    await new Promise((r) => setTimeout(r, 200));
    const second = await client.prompt("s-ev-2", "second");
    const first = await iterator.next();
    await iterator.return?.();
    expect(first.value).toMatchObject({ seq: second.seq, event: { type: "command_accepted" } });
  });
});

describe("client / state", () => {
  it("folds the agent state live with the protocol reducers", async () => {
    await promptAndWait("s-state-1", "one");
    const live = await client.state("s-state-1");
    expect(live.agent.isStreaming).toBe(false);
    expect(live.agent.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(live.agent.model).toEqual({ provider: "anthropic", modelId: "fake-model" });
    const seen: string[] = [];
    live.onChange((_view, event) => seen.push(event.type));
    await client.prompt("s-state-1", "two");
    const done = await live.waitFor((v) => v.agent.messages.length === 4 && !v.agent.isStreaming, 10_000);
    live.close();
    expect(done.agent.messages.map((m) => (m.role === "assistant" ? m.content : m.role))).toEqual([
      "user",
      [{ type: "text", text: "echo: one" }],
      "user",
      [{ type: "text", text: "echo: two" }],
    ]);
    expect(done.tree.entries.map((e) => e.type)).toEqual(["message", "message", "message", "message"]);
    expect(done.tree.leafId).toBe(done.tree.entries[3]?.id);
    expect(seen.slice(0, 2)).toEqual(["command_accepted", "agent_start"]);
  });
});

describe("client / an undecodable record at the end of a log", () => {
  // The fake loop fences its appends, so nothing is prompted on this session after the junk.
  it("state() catches up without waiting for a later event, and replay() lists the record as invalid", async () => {
    const { endSeq } = await promptAndWait("s-junk-1", "one");
    const nc = await connectNats({ url: server.url, name: "junk-writer" });
    try {
      const ack = await jetstream(nc).publish(subjects.event(partitionOf("s-junk-1", 4), "s-junk-1"), "{not json");
      expect(ack.seq).toBeGreaterThan(endSeq);
      const started = Date.now();
      const live = await client.state("s-junk-1", { timeoutMs: 5_000 });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(live.seq).toBe(endSeq);
      expect(live.agent.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
      live.close();

      const replayed = await client.replay("s-junk-1", { toSeq: ack.seq });
      expect(replayed.invalid.map((i) => i.seq)).toEqual([ack.seq]);
      expect([replayed.seq, replayed.agent.messages.length]).toEqual([endSeq, 2]);
    } finally {
      await nc.close();
    }
  });
});

describe("client / replay", () => {
  it("rebuilds the agent state and tree as they stood at a mid-run sequence", async () => {
    await promptAndWait("s-replay-1", "abcdef");
    const events = await take("s-replay-1", "start", FAKE_RUN_TYPES.length);
    const firstUpdate = events[7]?.seq as number;
    const mid = await client.replay("s-replay-1", { toSeq: firstUpdate });
    expect(mid.seq).toBe(firstUpdate);
    expect(mid.events).toBe(8);
    expect(mid.agent.isStreaming).toBe(true);
    expect(mid.agent.streamingMessage).toMatchObject({
      role: "assistant",
      content: [{ type: "text", text: "echo: " }],
    });
    expect(mid.tree.entries.map((e) => (e.type === "message" ? e.message.role : e.type))).toEqual(["user"]);

    const end = await client.replay("s-replay-1");
    expect(end.seq).toBe(events.at(-1)?.seq);
    expect(end.agent.isStreaming).toBe(false);
    expect(end.agent.messages.at(-1)).toMatchObject({ content: [{ type: "text", text: "echo: abcdef" }] });
    expect(end.tree.entries).toHaveLength(2);
    expect(end.invalid).toEqual([]);

    // Folding on from the mid-run view reads only the later events and equals the full replay.
    const midBefore = JSON.stringify(mid);
    const onward = await client.replay("s-replay-1", { from: mid });
    expect(onward.events).toBe(end.events - 8);
    expect({ seq: onward.seq, agent: onward.agent, tree: onward.tree, spend: onward.spend }).toEqual({
      seq: end.seq,
      agent: end.agent,
      tree: end.tree,
      spend: end.spend,
    });
    expect(JSON.stringify(mid)).toBe(midBefore);
    await expect(client.replay("s-replay-1", { from: end, toSeq: mid.seq })).rejects.toThrow(/before from.seq/);
  });

  it("an empty session replays to the empty state", async () => {
    const empty = await client.replay("s-never-used");
    expect([empty.seq, empty.events, empty.agent.messages.length, empty.tree.entries.length]).toEqual([0, 0, 0, 0]);
  });
});

describe("client / events across a server restart", () => {
  it("resumes after the last delivered sequence: no gap, no duplicate", async () => {
    await promptAndWait("s-restart-1", "before");
    const received: SessionEventItem[] = [];
    const reading = (async () => {
      for await (const item of client.events("s-restart-1", { from: "start" })) {
        received.push(item);
        if (received.length === FAKE_RUN_TYPES.length * 2 - 1) break;
      }
    })();
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(FAKE_RUN_TYPES.length);
    await server.restart();
    // Commands fail fast while the client reconnects; wait until JetStream answers again.
    await expect
      .poll(
        () =>
          client.lastSeq("s-restart-1").then(
            () => true,
            () => false,
          ),
        { timeout: 20_000 },
      )
      .toBe(true);
    await client.prompt("s-restart-1", "after");
    await reading;
    const seqs = received.map((i) => i.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(received.map((i) => i.event.type)).toEqual([
      ...FAKE_RUN_TYPES,
      ...FAKE_RUN_TYPES.filter((t) => t !== "session_created"),
    ]);
    const replayed = await client.replay("s-restart-1");
    expect(replayed.events).toBe(received.length);
  });
});
