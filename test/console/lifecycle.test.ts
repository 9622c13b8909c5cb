// The web console's lifecycle buttons in a real browser (Chromium via playwright-core) against the
// real stack: Delete and Archive on a session's page (after a confirmation), the refusal while a
// run is active, and Restore from archive on the page of a session that is gone.
import { fakeReply, fakeText } from "@fleet/testkit";
import { beforeAll, describe, expect, it } from "vitest";
import { waitIdle } from "../gateway/support.js";
import { startEndlessRun } from "../lifecycle/support.js";
import { useConsoleStack } from "../support/console-stack.js";

const ui = useConsoleStack();
/** What the next confirmation dialog is answered. */
let confirmAnswer = true;

beforeAll(() => {
  ui.page.on("dialog", (dialog) => void (confirmAnswer ? dialog.accept() : dialog.dismiss()));
});

async function answered(sessionId: string) {
  ui.stack.fake.script(fakeReply([fakeText(`hello from ${sessionId}`)]));
  await ui.stack.client.prompt(sessionId, "hi");
  await waitIdle(ui.stack.client, sessionId, 2);
}

async function openSession(sessionId: string) {
  await ui.page.goto(`${ui.base}/sessions/${sessionId}`);
  await ui.page.getByTestId("session").waitFor();
}

describe("console / session lifecycle", () => {
  it("Delete asks first; once confirmed the session is gone and the page goes back to the list", async () => {
    const sid = "lc-ui-del";
    await answered(sid);
    await openSession(sid);
    confirmAnswer = false;
    await ui.page.getByTestId("delete-session").click();
    await ui.page.waitForTimeout(300);
    expect(await ui.stack.client.lastSeq(sid)).toBeGreaterThan(0);

    confirmAnswer = true;
    await ui.page.getByTestId("delete-session").click();
    await ui.page.waitForURL(`${ui.base}/`);
    expect(await ui.stack.client.lastSeq(sid)).toBe(0);
    expect(await ui.stack.client.lifecycleRecord(sid)).toMatchObject({
      type: "session_deleted",
      by: "gateway local/operate",
    });
    await ui.page.goto(`${ui.base}/sessions/${sid}`);
    await ui.page.getByTestId("missing-session").waitFor();
  });

  it("Delete during a run shows the refusal; after Abort it deletes", async () => {
    const sid = "lc-ui-busy";
    await startEndlessRun(ui.stack, sid);
    await openSession(sid);
    await expect.poll(() => ui.page.getByTestId("session-status").textContent()).toBe("running");
    await ui.page.getByTestId("delete-session").click();
    await expect
      .poll(() => ui.page.getByTestId("lifecycle-note").textContent())
      .toBe("delete refused: Cannot delete a session while a run is active; abort it first");
    await ui.page.getByTestId("abort").click();
    await expect.poll(() => ui.page.getByTestId("session-status").textContent()).toBe("idle");
    await ui.page.getByTestId("delete-session").click();
    await ui.page.waitForURL(`${ui.base}/`);
    expect(await ui.stack.client.lastSeq(sid)).toBe(0);
  });

  it("Archive removes the session; Restore from archive on its page brings it back as it was", async () => {
    const sid = "lc-ui-arc";
    await answered(sid);
    await openSession(sid);
    const events = await ui.page.getByTestId("session").getAttribute("data-events");
    const transcript = await ui.page.locator(".transcript").textContent();
    await ui.page.getByTestId("archive-session").click();
    await ui.page.waitForURL(`${ui.base}/`);
    expect((await ui.stack.client.lifecycleRecord(sid))?.type).toBe("session_archived");

    await ui.page.goto(`${ui.base}/sessions/${sid}`);
    await ui.page.getByTestId("missing-session").waitFor();
    await ui.page.getByTestId("restore-session").click();
    await ui.page.getByTestId("session").waitFor({ timeout: 30_000 });
    // The restored log holds the history again, with the restore's own events around it.
    await expect
      .poll(async () => Number(await ui.page.getByTestId("session").getAttribute("data-events")))
      .toBeGreaterThan(Number(events));
    expect(await ui.page.locator(".transcript").textContent()).toBe(transcript);

    await ui.page.goto(`${ui.base}/sessions/lc-ui-never-archived`);
    await ui.page.getByTestId("restore-session").click();
    await expect
      .poll(() => ui.page.getByTestId("restore-note").textContent())
      .toBe("restore failed: No archive of session lc-ui-never-archived");
  });
});
