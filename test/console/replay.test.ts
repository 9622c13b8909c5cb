// The console's "Replay with…" in a real browser (Chromium via playwright-core) against the real
// stack: a replay of a session with recorded tools lands on the diff page, which says nothing
// differs once the replay ran; with another model it lists the model and cost differences.
import { fakeReply, fakeText } from "@fleet/testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayStack, startGatewayStack, waitIdle } from "../gateway/support.js";
import { buildConsole, launchChromium } from "./browser.js";

let stack: GatewayStack;
let browser: Browser;
let page: Page;
let base: string;

beforeAll(async () => {
  buildConsole();
  stack = await startGatewayStack();
  base = stack.gateway.url;
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on("pageerror", (err) => console.error(`console page error: ${err.message}`));
  page.setDefaultTimeout(20_000);
}, 120_000);

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await stack?.stop();
});

describe("console / replay with overrides", () => {
  it("Replay with… opens the diff of the source and its replay", async () => {
    const sid = "ui-replay";
    stack.fake.script(fakeReply([fakeText("hello there")]));
    await stack.client.prompt(sid, "hi");
    await waitIdle(stack.client, sid, 2);

    stack.fake.script(fakeReply([fakeText("hello there")]));
    await page.goto(`${base}/sessions/${sid}`);
    await page.getByTestId("session").waitFor();
    await page.getByTestId("replay-session").click();
    await page.waitForURL(new RegExp(`/diff/${sid}/s-`));
    await expect
      .poll(() => page.getByTestId("diff-summary").textContent(), { timeout: 20_000 })
      .toBe("Nothing differs: 1 turn(s) with the same messages, tool calls, tokens and cost (latency not compared).");
    expect(await page.getByTestId("diff-turn").count()).toBe(1);

    stack.fake.script(fakeReply([fakeText("hello there")]));
    await page.goto(`${base}/sessions/${sid}`);
    await page.getByTestId("replay-model").fill("claude-haiku-4-5");
    await page.getByTestId("replay-session").click();
    await page.waitForURL(new RegExp(`/diff/${sid}/s-`));
    await expect
      .poll(() => page.getByTestId("diff-summary").textContent(), { timeout: 20_000 })
      .toBe("2 difference(s), 0 tool call(s) diverged.");
    expect(await page.getByTestId("diff-difference").allTextContents()).toEqual([
      expect.stringMatching(/^turn 1 model/),
      expect.stringMatching(/^turn 1 cost/),
    ]);
  });
});
