// An agent calls an MCP server's tools end to end: `fleet up --mcp-config` (real loop, tool runner,
// store, NATS, Redis), the fake Anthropic API asking for mcp__ tools, server-everything from npm
// run over stdio in the runner's sandbox.
import { existsSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type FakeAnthropic, fakeReply, fakeText, fakeToolUse, startFakeAnthropic } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EVERYTHING, everythingStdio } from "../tools/mcp-support.js";
import { type FleetStack, promptJson, startFleetStack } from "./support/fleet-stack.js";

const HAS_LOOP = existsSync(fileURLToPath(new URL("../../services/loop/src/main.ts", import.meta.url)));
const SESSION = "s-e2e-mcp";

interface Item {
  seq: number;
  event: { type: string; toolName?: string; partialResult?: unknown; result?: unknown; [key: string]: unknown };
}

describe.skipIf(!HAS_LOOP)("e2e / an agent calls MCP tools", () => {
  let fake: FakeAnthropic;
  let stack: FleetStack;
  let configDir: string;
  let items: Item[];

  beforeAll(async () => {
    fake = await startFakeAnthropic();
    fake.script(
      fakeReply([
        fakeText("Echoing."),
        fakeToolUse("mcp__everything__echo", { message: "hello from fleet" }, { id: "toolu_echo_1" }),
      ]),
      fakeReply([
        fakeText("Now a long one."),
        fakeToolUse(
          "mcp__everything__trigger-long-running-operation",
          { duration: 1, steps: 4 },
          { id: "toolu_long_1" },
        ),
      ]),
      fakeReply("Both MCP tools answered."),
    );
    configDir = await mkdtemp(join(tmpdir(), "fleet-e2e-mcp-"));
    const config = join(configDir, "mcp.json");
    writeFileSync(
      config,
      JSON.stringify({ mcpServers: { everything: everythingStdio({ args: [EVERYTHING, "stdio"] }) } }),
    );
    stack = await startFleetStack(
      { ANTHROPIC_API_KEY: "sk-test", ANTHROPIC_BASE_URL: fake.url, FLEET_DEFAULT_MODEL: "claude-test" },
      ["--mcp-config", config],
    );
    items = await promptJson<Item>(stack, SESSION, "use the MCP tools");
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
    await fake?.stop();
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  it("offers the server's tools to the model with their schema", () => {
    const tools = (fake.requests[0]?.body?.tools ?? []) as { name: string; input_schema?: unknown }[];
    const echo = tools.find((t) => t.name === "mcp__everything__echo");
    expect(echo?.input_schema).toMatchObject({ type: "object", properties: { message: { type: "string" } } });
  });

  it("returns the MCP server's answer to the model as the tool result", () => {
    expect(fake.requests).toHaveLength(3);
    const sent = JSON.stringify(fake.requests[1]?.body?.messages);
    expect(sent).toContain("toolu_echo_1");
    expect(sent).toContain("Echo: hello from fleet");
    expect(JSON.stringify(fake.requests[2]?.body?.messages)).toContain("Long running operation completed");
  });

  it("streams the server's progress as tool_execution_update events", () => {
    const types = items.map((i) => `${i.event.type}${i.event.toolName ? `:${i.event.toolName}` : ""}`);
    expect(types).toContain("tool_execution_end:mcp__everything__echo");
    const updates = items.filter(
      (i) =>
        i.event.type === "tool_execution_update" &&
        i.event.toolName === "mcp__everything__trigger-long-running-operation",
    );
    expect(updates.length).toBeGreaterThanOrEqual(1);
    expect(updates[0]?.event.partialResult).toMatchObject({ progress: expect.any(Number), total: 4 });
    expect(types.at(-1)).toBe("agent_end");
  });
});
