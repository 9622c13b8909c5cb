// The console's Agents page in a real browser (Chromium via playwright-core) against the real stack:
// agents with their versions and how many sessions run each, updated as a session moves to another
// version; the sessions list shows the version each session runs (PROTOCOL "Agents").
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useConsoleStack } from "../support/console-stack.js";
import { ROOT } from "./browser.js";

const ui = useConsoleStack();

const sessionsOfVersion = (version: number) =>
  ui.page
    .locator(`[data-testid="version-row"][data-version="${version}"] [data-testid="version-sessions"]`)
    .textContent();

describe("console / agents", () => {
  it("lists agents, their versions and the sessions of each version, live", async () => {
    const { agents } = ui.stack.client;
    await agents.create("support", {
      settings: { model: { provider: "anthropic", modelId: "claude-support" }, systemPrompt: "Support v1." },
    });
    await agents.update("support", { settings: { systemPrompt: "Support v2." }, description: "shorter answers" });
    await agents.create("triage", { settings: { thinkingLevel: "high" } });
    const a = await ui.stack.client.createSession({}, { agent: "support@1" });
    await ui.stack.client.createSession({}, { agent: "support@1" });
    await ui.stack.client.createSession({}, { agent: "support" });

    await ui.page.goto(`${ui.base}/agents`);
    const support = ui.page.locator('[data-testid="agent-row"][data-agent="support"]');
    await expect.poll(() => support.getByTestId("agent-sessions").textContent()).toBe("3");
    expect(await support.textContent()).toContain("v2");
    const triage = ui.page.locator('[data-testid="agent-row"][data-agent="triage"]');
    expect(await triage.getByTestId("agent-sessions").textContent()).toBe("0");

    await support.getByTestId("agent-open").click();
    await expect.poll(() => sessionsOfVersion(1)).toBe("2");
    expect(await sessionsOfVersion(2)).toBe("1");
    expect(await ui.page.getByTestId("agent-versions").textContent()).toContain("shorter answers");
    expect(await ui.page.getByTestId("version-prompt").first().textContent()).toBe("Support v1.");

    // A session moves to v2: the counts follow within a refresh.
    await ui.stack.client.setAgent(a.sessionId, "support@2");
    await expect.poll(() => sessionsOfVersion(2), { timeout: 10_000 }).toBe("2");
    expect(await sessionsOfVersion(1)).toBe("1");
    await ui.page.screenshot({ path: join(ROOT, "docs/screenshots/agents.png") });

    await ui.page.goto(`${ui.base}/`);
    const row = ui.page.getByTestId("session-row").filter({ hasText: a.sessionId });
    await expect.poll(() => row.getByTestId("session-agent").textContent()).toBe("support@2");
    // The session's page says which version it runs, folded from its log in the browser.
    await ui.page.goto(`${ui.base}/sessions/${a.sessionId}`);
    await expect.poll(() => ui.page.getByTestId("session-agent").textContent()).toBe(" · agent support@2");
  }, 90_000);
});
