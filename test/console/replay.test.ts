// The console's "Replay with…" in a real browser (Chromium via playwright-core) against the real
// stack: a replay of a session with recorded tools lands on the diff page, which says nothing
// differs once the replay ran; with another model it lists the model and cost differences.
import { fakeReply, fakeText } from "@fleet/testkit";
import { describe, expect, it } from "vitest";
import { waitIdle } from "../gateway/support.js";
import { useConsoleStack } from "../support/console-stack.js";

const ui = useConsoleStack({ stepTimeoutMs: 20_000 });

describe("console / replay with overrides", () => {
  it("Replay with… opens the diff of the source and its replay", async () => {
    const sid = "ui-replay";
    ui.stack.fake.script(fakeReply([fakeText("hello there")]));
    await ui.stack.client.prompt(sid, "hi");
    await waitIdle(ui.stack.client, sid, 2);

    ui.stack.fake.script(fakeReply([fakeText("hello there")]));
    await ui.page.goto(`${ui.base}/sessions/${sid}`);
    await ui.page.getByTestId("session").waitFor();
    await ui.page.getByTestId("replay-session").click();
    await ui.page.waitForURL(new RegExp(`/diff/${sid}/s-`));
    await expect
      .poll(() => ui.page.getByTestId("diff-summary").textContent(), { timeout: 20_000 })
      .toBe("Nothing differs: 1 turn(s) with the same messages, tool calls, tokens and cost (latency not compared).");
    expect(await ui.page.getByTestId("diff-turn").count()).toBe(1);

    ui.stack.fake.script(fakeReply([fakeText("hello there")]));
    await ui.page.goto(`${ui.base}/sessions/${sid}`);
    await ui.page.getByTestId("replay-model").fill("claude-haiku-4-5");
    await ui.page.getByTestId("replay-session").click();
    await ui.page.waitForURL(new RegExp(`/diff/${sid}/s-`));
    await expect
      .poll(() => ui.page.getByTestId("diff-summary").textContent(), { timeout: 20_000 })
      .toBe("2 difference(s), 0 tool call(s) diverged.");
    expect(await ui.page.getByTestId("diff-difference").allTextContents()).toEqual([
      expect.stringMatching(/^turn 1 model/),
      expect.stringMatching(/^turn 1 cost/),
    ]);
  });
});
