// The console's approval controls in a real browser (Chromium via playwright-core) against the real
// stack: rules of the tenant and of a session edited and saved, and a call approved with edited
// arguments that then runs with them (PROTOCOL "Tool approvals").
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { FleetEvent } from "@fleet/protocol";
import { fakeReply, fakeText, fakeToolUse } from "@fleet/testkit";
import { describe, expect, it } from "vitest";
import { call, waitIdle } from "../gateway/support.js";
import { useConsoleStack } from "../support/console-stack.js";

const ui = useConsoleStack({ stack: { approvalTools: ["write"] } });

/** Loads the rules of `sessionId` (empty: the tenant's) in the panel, replaces them and saves. */
async function saveRules(sessionId: string, rules: unknown[]) {
  await ui.page.getByTestId("rules-session").fill(sessionId);
  await ui.page.getByTestId("rules-load").click();
  await expect.poll(() => ui.page.getByTestId("rules-json").inputValue()).toBe("[]");
  await ui.page.getByTestId("rules-json").fill(JSON.stringify(rules));
  await ui.page.getByTestId("rules-save").click();
  await expect.poll(() => ui.page.getByTestId("rules-note").textContent()).toBe("saved");
}

describe("console / approvals as policy", () => {
  it("sets tenant and session rules, and approves a call with edited arguments that it then runs with", async () => {
    const created = await call(ui.base, "POST", "/v1/sessions", { body: {} });
    const sessionId = created.body.sessionId as string;
    await ui.page.goto(`${ui.base}/approvals`);
    const tenantRules = [{ tool: "write", args: { pointer: "/path", regex: "^secret" }, action: "deny" }];
    await saveRules("", tenantRules);
    expect((await call(ui.base, "GET", "/v1/approval-rules")).body).toEqual({ rules: tenantRules });
    const sessionRules = [
      { tool: "wr*", args: { pointer: "/path", regex: "^draft" }, action: "ask", expiresInMs: 600_000 },
    ];
    await saveRules(sessionId, sessionRules);
    await expect
      .poll(async () => (await call(ui.base, "GET", `/v1/sessions/${sessionId}/approval-rules`)).body)
      .toEqual({ rules: sessionRules });

    ui.stack.fake.script(
      fakeReply([
        fakeText("Drafting."),
        fakeToolUse("write", { path: "draft.txt", content: "draft\n" }, { id: "toolu_ui_edit" }),
      ]),
      fakeReply("Written."),
    );
    await call(ui.base, "POST", `/v1/sessions/${sessionId}/commands`, {
      body: { type: "prompt", text: "write a draft" },
    });
    const row = ui.page.getByTestId("approval-row").filter({ hasText: sessionId });
    await row.waitFor({ timeout: 15_000 });
    await row.getByTestId("edit-args").click();
    const editor = row.getByTestId("edited-args");
    expect(JSON.parse(await editor.inputValue())).toEqual({ path: "draft.txt", content: "draft\n" });
    await editor.fill(JSON.stringify({ path: "final.txt", content: "edited\n" }));
    await row.getByTestId("approve-edited").click();
    await expect.poll(() => row.getByTestId("edited-note").textContent()).toBe("approved with edits");
    await waitIdle(ui.stack.client, sessionId, 4);

    const events: FleetEvent[] = [];
    for await (const item of ui.stack.client.events(sessionId, { signal: AbortSignal.timeout(5_000) })) {
      events.push(item.event);
      if (item.event.type === "agent_end") break;
    }
    expect(events.find((e) => e.type === "tool_approval_requested")).toMatchObject({
      toolCallId: "toolu_ui_edit",
      rule: { scope: "session", index: 0 },
      expiresAt: expect.any(Number),
    });
    expect(events.find((e) => e.type === "tool_approval_resolved")).toMatchObject({
      approved: true,
      editedArgs: { path: "final.txt", content: "edited\n" },
    });
    expect(readFileSync(join(ui.stack.workspace, sessionId, "final.txt"), "utf8")).toBe("edited\n");
  }, 120_000);
});
