// The console's Children tab in a real browser (Chromium via playwright-core) against the real stack
// (PROTOCOL "Sub-agents"): a parent's two children appear with their status, which changes while the
// page stays open; an approval asked inside a child is decided from the parent's tab; a child opens
// on click.
import { AGENT_TOOL_NAME, childSessionId } from "@fleet/protocol";
import { fakeReply, fakeToolUse, type RecordedRequest } from "@fleet/testkit";
import { describe, expect, it } from "vitest";
import { call, waitIdle } from "../gateway/support.js";
import { useConsoleStack } from "../support/console-stack.js";

const ui = useConsoleStack({
  stack: {
    approvalTools: ["write"],
    subAgents: { maxDepth: 3, maxFanOut: 8, closePolicy: "terminate", timeoutMs: 60_000, progressMs: 100 },
  },
});

/** The session's task: its first user message. */
const task = (r: RecordedRequest) => JSON.stringify(r.body?.messages[0] ?? null);
const answered = (r: RecordedRequest) => JSON.stringify(r.body?.messages ?? []).includes("tool_result");

describe("console / children", () => {
  it("shows a parent's children with live status, decides a child's approval, opens a child", async () => {
    const { stack, page, base } = ui;
    const P = "console-children-parent";
    const quick = childSessionId(P, "toolu_quick");
    const notes = childSessionId(P, "toolu_notes");
    // Parent: two agent calls, then its answer. Child "sum": answers at once. Child "notes": a write
    // that waits for approval, then its answer.
    stack.fake.respondWith((r) => {
      if (task(r).includes("sum two and two")) return fakeReply("the sum is 4");
      if (task(r).includes("write notes"))
        return answered(r)
          ? fakeReply("notes written")
          : fakeReply([fakeToolUse("write", { path: "notes.txt", content: "hi\n" }, { id: "toolu_write" })]);
      return answered(r)
        ? fakeReply("parent done")
        : fakeReply([
            fakeToolUse(AGENT_TOOL_NAME, { prompt: "sum two and two", description: "sum" }, { id: "toolu_quick" }),
            fakeToolUse(AGENT_TOOL_NAME, { prompt: "write notes", description: "notes" }, { id: "toolu_notes" }),
          ]);
    });
    const sent = await call(base, "POST", `/v1/sessions/${P}/commands`, { body: { type: "prompt", text: "delegate" } });
    expect(sent.status).toBe(200);

    await page.goto(`${base}/sessions/${P}`);
    await page.getByTestId("session").waitFor();
    await page.getByTestId("children-tab").click();
    const row = (id: string) => page.getByTestId("child-session").filter({ hasText: id });
    const status = (id: string) => row(id).getByTestId("child-status").textContent();
    // Both children listed in call order; the quick one finishes, the other waits at its approval.
    await expect
      .poll(async () => page.getByTestId("child-session").locator("a").allTextContents(), { timeout: 20_000 })
      .toEqual([quick, notes]);
    await expect.poll(() => status(quick), { timeout: 20_000 }).toBe("idle");
    expect(await status(notes)).toBe("running");
    expect(await row(quick).textContent()).toContain("sum");

    // The child's approval, answered from the parent's tab.
    const approval = page.getByTestId("child-approval");
    await approval.waitFor({ timeout: 20_000 });
    expect(await approval.textContent()).toContain(notes);
    expect(await approval.textContent()).toContain("write");
    await approval.getByTestId("approve").click();
    // The same page, not reloaded: the child ends, the approval goes, the parent ends.
    await expect.poll(() => status(notes), { timeout: 20_000 }).toBe("idle");
    await expect.poll(() => page.getByTestId("child-approval").count()).toBe(0);
    await expect.poll(() => page.getByTestId("session-status").textContent(), { timeout: 20_000 }).toBe("idle");
    await waitIdle(stack.client, P, 4);
    const parent = await stack.client.replay(P);
    expect(JSON.stringify(parent.agent.messages)).toContain("notes written");
    // Each child's spend is shown, and the parent's total holds it.
    expect(await row(notes).textContent()).toMatch(/in \d+/);

    // A click opens the child.
    await row(quick).locator("a").click();
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/sessions/${quick}`);
    await expect
      .poll(() => page.getByTestId("transcript").textContent(), { timeout: 15_000 })
      .toContain("the sum is 4");
  }, 120_000);
});
