// The console's Agents page in a real browser (Chromium via playwright-core) against the real stack:
// agents with their versions and how many sessions run each, updated as a session moves to another
// version; the sessions list shows the version each session runs (PROTOCOL "Agents").
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayStack, startGatewayStack } from "../gateway/support.js";
import { buildConsole, launchChromium, newConsolePage, ROOT } from "./browser.js";

let stack: GatewayStack;
let browser: Browser;
let page: Page;
let base: string;

beforeAll(async () => {
  buildConsole();
  stack = await startGatewayStack();
  base = stack.gateway.url;
  browser = await launchChromium();
  page = await newConsolePage(browser);
}, 120_000);

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await stack?.stop();
});

const sessionsOfVersion = (version: number) =>
  page.locator(`[data-testid="version-row"][data-version="${version}"] [data-testid="version-sessions"]`).textContent();

describe("console / agents", () => {
  it("lists agents, their versions and the sessions of each version, live", async () => {
    const { agents } = stack.client;
    await agents.create("support", {
      settings: { model: { provider: "anthropic", modelId: "claude-support" }, systemPrompt: "Support v1." },
    });
    await agents.update("support", { settings: { systemPrompt: "Support v2." }, description: "shorter answers" });
    await agents.create("triage", { settings: { thinkingLevel: "high" } });
    const a = await stack.client.createSession({}, { agent: "support@1" });
    await stack.client.createSession({}, { agent: "support@1" });
    await stack.client.createSession({}, { agent: "support" });

    await page.goto(`${base}/agents`);
    const support = page.locator('[data-testid="agent-row"][data-agent="support"]');
    await expect.poll(() => support.getByTestId("agent-sessions").textContent()).toBe("3");
    expect(await support.textContent()).toContain("v2");
    const triage = page.locator('[data-testid="agent-row"][data-agent="triage"]');
    expect(await triage.getByTestId("agent-sessions").textContent()).toBe("0");

    await support.getByTestId("agent-open").click();
    await expect.poll(() => sessionsOfVersion(1)).toBe("2");
    expect(await sessionsOfVersion(2)).toBe("1");
    expect(await page.getByTestId("agent-versions").textContent()).toContain("shorter answers");
    expect(await page.getByTestId("version-prompt").first().textContent()).toBe("Support v1.");

    // A session moves to v2: the counts follow within a refresh.
    await stack.client.setAgent(a.sessionId, "support@2");
    await expect.poll(() => sessionsOfVersion(2), { timeout: 10_000 }).toBe("2");
    expect(await sessionsOfVersion(1)).toBe("1");
    await page.screenshot({ path: join(ROOT, "docs/screenshots/agents.png") });

    await page.goto(`${base}/`);
    const row = page.getByTestId("session-row").filter({ hasText: a.sessionId });
    await expect.poll(() => row.getByTestId("session-agent").textContent()).toBe("support@2");
    // The session's page says which version it runs, folded from its log in the browser.
    await page.goto(`${base}/sessions/${a.sessionId}`);
    await expect.poll(() => page.getByTestId("session-agent").textContent()).toBe(" · agent support@2");
  }, 90_000);
});
