// The whole pipeline through the CLI: `fleet up` against the fake Anthropic API, then `fleet prompt`
// makes the model call `write` and then `read`. Needs the loop service (services/loop/src/main.ts).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { FleetClient, StoreQueryError } from "@fleet/client";
import { type FakeAnthropic, fakeReply, fakeText, fakeToolUse, startFakeAnthropic } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FleetStack, startFleetStack } from "./support/fleet-stack.js";

const HAS_LOOP = existsSync(fileURLToPath(new URL("../../services/loop/src/main.ts", import.meta.url)));
const SESSION = "s-e2e-pipeline";

interface Item {
  seq: number;
  event: { type: string; toolName?: string; message?: { role: string }; [key: string]: unknown };
}

describe.skipIf(!HAS_LOOP)("e2e / full pipeline", () => {
  let fake: FakeAnthropic;
  let stack: FleetStack;
  let items: Item[];

  beforeAll(async () => {
    fake = await startFakeAnthropic();
    fake.script(
      fakeReply([
        fakeText("I'll write the file."),
        fakeToolUse("write", { path: "notes.txt", content: "hello fleet\n" }, { id: "toolu_write_1" }),
      ]),
      fakeReply([
        fakeText("Now I'll read it back."),
        fakeToolUse("read", { path: "notes.txt" }, { id: "toolu_read_1" }),
      ]),
      fakeReply("The file says: hello fleet"),
    );
    stack = await startFleetStack({
      ANTHROPIC_API_KEY: "sk-test",
      ANTHROPIC_BASE_URL: fake.url,
      FLEET_DEFAULT_MODEL: "claude-test",
    });
    const result = await stack.fleet(["prompt", "--json", "-s", SESSION, "write notes.txt, then read it"], 120_000);
    expect([result.code, result.stderr]).toEqual([0, ""]);
    items = result.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as Item);
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
    await fake?.stop();
  });

  it("writes the file on disk through the tool runner", () => {
    expect(readFileSync(join(stack.workspace, "notes.txt"), "utf8")).toBe("hello fleet\n");
    expect(fake.requests).toHaveLength(3);
  });

  it("puts the full event order on the stream", () => {
    // Consecutive message_update events collapse to one; tool_execution_update is optional per tool.
    const collapsed = items
      .filter((i) => i.event.type !== "tool_execution_update")
      .map((i) =>
        i.event.message
          ? `${i.event.type}:${i.event.message.role}`
          : i.event.toolName
            ? `${i.event.type}:${i.event.toolName}`
            : i.event.type,
      )
      .filter((type, index, all) => !(type === "message_update" && all[index - 1] === "message_update"));
    const toolTurn = (tool: string) => [
      "message_start:assistant",
      "message_update",
      "message_end:assistant",
      `tool_execution_start:${tool}`,
      `tool_execution_end:${tool}`,
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end:assistant",
    ];
    expect(collapsed).toEqual([
      "command_accepted",
      "session_created",
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      ...toolTurn("write"),
      "turn_start",
      ...toolTurn("read"),
      "turn_start",
      "message_start:assistant",
      "message_update",
      "message_end:assistant",
      "turn_end:assistant",
      "agent_end",
    ]);
    const seqs = items.map((i) => i.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
  });

  it("the store's tree holds the six messages with the leaf on the last one", async () => {
    const result = await stack.fleet(["tree", SESSION, "--json"]);
    expect(result.code).toBe(0);
    const tree = JSON.parse(result.stdout) as {
      source: string;
      entries: { id: string; parentId: string | null; type: string; message?: { role: string } }[];
      leafId: string;
    };
    expect(tree.source).toBe("store");
    expect(tree.entries.map((e) => e.message?.role ?? e.type)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
      "toolResult",
      "assistant",
    ]);
    expect(tree.entries.map((e) => e.parentId)).toEqual([null, ...tree.entries.slice(0, -1).map((e) => e.id)]);
    expect(tree.leafId).toBe(tree.entries.at(-1)?.id);
    const drawn = await stack.fleet(["tree", SESSION]);
    expect(drawn.stdout).toMatch(/assistant: "The file says: hello fleet" ◀ leaf\n$/);
  });

  it("fleet export writes pi v3 JSONL", async () => {
    const result = await stack.fleet(["export", SESSION]);
    expect(result.code).toBe(0);
    const lines = result.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; id: string; version?: number });
    expect(lines[0]).toMatchObject({ type: "session", version: 3, id: SESSION });
    expect(lines.slice(1).map((l) => l.type)).toEqual([
      "message",
      "message",
      "message",
      "message",
      "message",
      "message",
    ]);
  });

  it("fleet replay --to a mid-run sequence shows the state at that point", async () => {
    const writeEnd = items.find((i) => i.event.type === "tool_execution_end" && i.event.toolName === "write") as Item;
    const result = await stack.fleet(["replay", SESSION, "--to", String(writeEnd.seq), "--json"]);
    expect(result.code).toBe(0);
    const state = JSON.parse(result.stdout) as {
      seq: number;
      agent: { isStreaming: boolean; pendingToolCalls: string[]; messages: { role: string }[] };
      tree: { entries: unknown[] };
    };
    expect(state.seq).toBe(writeEnd.seq);
    expect(state.agent.isStreaming).toBe(true);
    expect(state.agent.pendingToolCalls).toEqual([]);
    expect(state.agent.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(state.tree.entries).toHaveLength(2);
  });

  it("fleet import brings an exported session back as a new session with the same tree shape", async () => {
    const file = join(stack.dir, "exported.jsonl");
    expect((await stack.fleet(["export", SESSION, "-o", file])).code).toBe(0);
    const imported = await stack.fleet(["import", file, "-s", "s-e2e-imported"]);
    expect([imported.code, imported.stdout, imported.stderr]).toEqual([0, "s-e2e-imported\n", ""]);
    let tree: { entries: { message?: { role: string; content: unknown } }[] } = { entries: [] };
    await expect
      .poll(
        async () => {
          const result = await stack.fleet(["tree", "s-e2e-imported", "--json"]);
          tree = result.code === 0 ? JSON.parse(result.stdout) : { entries: [] };
          return tree.entries.length;
        },
        { timeout: 20_000 },
      )
      .toBe(6);
    expect(tree.entries.map((e) => e.message?.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
      "toolResult",
      "assistant",
    ]);
  });

  it("fleet fork copies the branch up to an entry into a new session", async () => {
    const original = JSON.parse((await stack.fleet(["tree", SESSION, "--json"])).stdout) as {
      entries: { id: string }[];
    };
    const third = original.entries[2]?.id as string;
    const forked = await stack.fleet(["fork", SESSION, third.slice(-8), "-s", "s-e2e-fork"]);
    expect([forked.code, forked.stdout, forked.stderr]).toEqual([0, "s-e2e-fork\n", ""]);
    // The command resolves on command_accepted; the copied entries are appended right after it.
    await expect
      .poll(
        async () => {
          const replayed = JSON.parse((await stack.fleet(["replay", "s-e2e-fork", "--json"])).stdout) as {
            agent: { messages: { role: string }[] };
          };
          return replayed.agent.messages.map((m) => m.role);
        },
        { timeout: 20_000 },
      )
      .toEqual(["user", "assistant", "toolResult"]);
  });

  it("fleet doctor reports the stack ready", async () => {
    const result = await stack.fleet(["doctor"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/✓ loop leases: 4\/4 held/);
    // One store lease per stream group (K = 1 here: one consumer reads every partition).
    expect(result.stdout).toMatch(/✓ store leases: 1\/1 held/);
    expect(result.stdout).toMatch(/✓ tools: 7 registered, 1 live runner\(s\)/);
    expect(result.stdout).toMatch(/✓ storage: [\d.]+ MB used; writes accepted/);
    expect(result.stdout.trimEnd().split("\n").at(-1)).toBe("ready");
  });

  it("the SDK reads the store: context, branch, entry, sessions, and typed errors", async () => {
    const client = await FleetClient.connect({ natsUrl: stack.natsUrl });
    try {
      const context = await client.getContext(SESSION);
      expect(context.messages.map((m) => m.role)).toEqual([
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
      ]);
      expect(context.model).toEqual({ provider: "anthropic", modelId: "claude-test" });
      const tree = await client.getTree(SESSION);
      expect(context.leafId).toBe(tree.leafId);
      const second = tree.entries[1]?.id as string;
      const branch = await client.getBranch(SESSION, second);
      expect(branch.entries.map((e) => e.id)).toEqual(tree.entries.slice(0, 2).map((e) => e.id));
      expect((await client.getEntry(SESSION, second)).entry).toEqual(tree.entries[1]);
      const sessions = await client.listSessions();
      expect(sessions.sessions.map((s) => s.sessionId)).toContain(SESSION);
      const missing = await client.getEntry(SESSION, "no-such-entry").catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(StoreQueryError);
      expect([(missing as StoreQueryError).kind, (missing as StoreQueryError).code]).toEqual(["store", "not_found"]);
    } finally {
      await client.close();
    }
  });
});
