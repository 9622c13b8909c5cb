// The documented example runner (examples/tool-runner) serves its custom tool over NATS.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  finalOf,
  publishCall,
  type RunnerProcess,
  type Stack,
  spawnRunner,
  startStack,
  waitForResult,
} from "./support.js";

describe("example tool runner", () => {
  let stack: Stack;
  let runner: RunnerProcess;
  beforeAll(async () => {
    stack = await startStack();
    runner = await spawnRunner(stack, "example-1", { entry: "example" });
  });
  afterAll(async () => {
    runner.proc.kill("SIGTERM");
    expect(await runner.exited).toBe(0);
    await stack.stop();
  });

  it("runs the custom word_count tool and refuses paths outside the workspace", async () => {
    await mkdir(join(stack.workspaceRoot, "s-ex"), { recursive: true });
    await writeFile(join(stack.workspaceRoot, "s-ex", "poem.txt"), "roses are red\nviolets are blue\n");
    await publishCall(stack.js, {
      sessionId: "s-ex",
      toolCallId: "c1",
      toolName: "word_count",
      args: { path: "poem.txt" },
    });
    expect(finalOf(await waitForResult(stack, "s-ex", "c1"))).toEqual({
      kind: "result",
      content: [{ type: "text", text: "2 lines, 6 words, 31 characters" }],
      details: { lines: 2, words: 6, chars: 31 },
      isError: false,
    });
    await publishCall(stack.js, {
      sessionId: "s-ex",
      toolCallId: "c2",
      toolName: "word_count",
      args: { path: "../../etc/passwd" },
    });
    expect(finalOf(await waitForResult(stack, "s-ex", "c2"))).toMatchObject({
      isError: true,
      content: [{ type: "text", text: expect.stringMatching(/^Path "..\/..\/etc\/passwd" is outside the workspace/) }],
    });
    await publishCall(stack.js, { sessionId: "s-ex", toolCallId: "c3", toolName: "read", args: { path: "poem.txt" } });
    expect(finalOf(await waitForResult(stack, "s-ex", "c3")).content).toEqual([
      { type: "text", text: "     1\troses are red\n     2\tviolets are blue" },
    ]);
  });
});
