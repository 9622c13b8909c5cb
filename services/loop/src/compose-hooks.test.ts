// composeHooks' beforeToolCall: the first block wins; replacement arguments (an edited approval)
// go to the hooks after and are the result.
import type { ToolCallContent } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import type { BeforeToolCallContext } from "./engine/index.js";
import { composeHooks } from "./hooks.js";

const toolCall: ToolCallContent = { type: "toolCall", id: "t1", name: "bash", arguments: { command: "ls" } };
const context = { toolCall, args: { command: "ls" } } as unknown as BeforeToolCallContext;

describe("composeHooks / beforeToolCall", () => {
  it("passes replacement args on and returns the last ones", async () => {
    const seen: unknown[] = [];
    const hooks = composeHooks([
      { beforeToolCall: () => ({ args: { command: "ls -a" } }) },
      {
        beforeToolCall: (c) => {
          seen.push(c.args);
          return undefined;
        },
      },
      { beforeToolCall: (c) => ({ args: { command: `${(c.args as { command: string }).command} /tmp` } }) },
    ]);
    expect(await hooks.beforeToolCall?.(context, undefined)).toEqual({ args: { command: "ls -a /tmp" } });
    expect(seen).toEqual([{ command: "ls -a" }]);
  });

  it("a block ends the chain; no hook with args or block: undefined", async () => {
    const late: string[] = [];
    const blocked = composeHooks([
      { beforeToolCall: () => ({ args: { command: "x" } }) },
      { beforeToolCall: () => ({ block: true, reason: "no" }) },
      {
        beforeToolCall: () => {
          late.push("ran");
          return undefined;
        },
      },
    ]);
    expect(await blocked.beforeToolCall?.(context, undefined)).toEqual({ block: true, reason: "no" });
    expect(late).toEqual([]);
    const none = composeHooks([{ beforeToolCall: () => undefined }]);
    expect(await none.beforeToolCall?.(context, undefined)).toBeUndefined();
  });
});
