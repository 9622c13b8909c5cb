// The web console's lifecycle buttons in a real browser (Chromium via playwright-core) against the
// real stack: Delete and Archive on a session's page (after a confirmation), the refusal while a
// run is active, and Restore from archive on the page of a session that is gone.
import { fakeReply, fakeText } from "@fleet/testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayStack, startGatewayStack, waitIdle } from "../gateway/support.js";
import { startEndlessRun } from "../lifecycle/support.js";
import { buildConsole, launchChromium } from "./browser.js";

let stack: GatewayStack;
let browser: Browser;
let page: Page;
let base: string;
/** What the next confirmation dialog is answered. */
let confirmAnswer = true;

beforeAll(async () => {
  buildConsole();
  stack = await startGatewayStack();
  base = stack.gateway.url;
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on("pageerror", (err) => console.error(`console page error: ${err.message}`));
  page.on("dialog", (dialog) => void (confirmAnswer ? dialog.accept() : dialog.dismiss()));
  page.setDefaultTimeout(15_000);
}, 120_000);

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await stack?.stop();
});

async function answered(sessionId: string) {
  stack.fake.script(fakeReply([fakeText(`hello from ${sessionId}`)]));
  await stack.client.prompt(sessionId, "hi");
  await waitIdle(stack.client, sessionId, 2);
}

async function openSession(sessionId: string) {
  await page.goto(`${base}/sessions/${sessionId}`);
  await page.getByTestId("session").waitFor();
}

describe("console / session lifecycle", () => {
  it("Delete asks first; once confirmed the session is gone and the page goes back to the list", async () => {
    const sid = "lc-ui-del";
    await answered(sid);
    await openSession(sid);
    confirmAnswer = false;
    await page.getByTestId("delete-session").click();
    await page.waitForTimeout(300);
    expect(await stack.client.lastSeq(sid)).toBeGreaterThan(0);

    confirmAnswer = true;
    await page.getByTestId("delete-session").click();
    await page.waitForURL(`${base}/`);
    expect(await stack.client.lastSeq(sid)).toBe(0);
    expect(await stack.client.lifecycleRecord(sid)).toMatchObject({
      type: "session_deleted",
      by: "gateway local/operate",
    });
    await page.goto(`${base}/sessions/${sid}`);
    await page.getByTestId("missing-session").waitFor();
  });

  it("Delete during a run shows the refusal; after Abort it deletes", async () => {
    const sid = "lc-ui-busy";
    await startEndlessRun(stack, sid);
    await openSession(sid);
    await expect.poll(() => page.getByTestId("session-status").textContent()).toBe("running");
    await page.getByTestId("delete-session").click();
    await expect
      .poll(() => page.getByTestId("lifecycle-note").textContent())
      .toBe("delete refused: Cannot delete a session while a run is active; abort it first");
    await page.getByTestId("abort").click();
    await expect.poll(() => page.getByTestId("session-status").textContent()).toBe("idle");
    await page.getByTestId("delete-session").click();
    await page.waitForURL(`${base}/`);
    expect(await stack.client.lastSeq(sid)).toBe(0);
  });

  it("Archive removes the session; Restore from archive on its page brings it back as it was", async () => {
    const sid = "lc-ui-arc";
    await answered(sid);
    await openSession(sid);
    const events = await page.getByTestId("session").getAttribute("data-events");
    const transcript = await page.locator(".transcript").textContent();
    await page.getByTestId("archive-session").click();
    await page.waitForURL(`${base}/`);
    expect((await stack.client.lifecycleRecord(sid))?.type).toBe("session_archived");

    await page.goto(`${base}/sessions/${sid}`);
    await page.getByTestId("missing-session").waitFor();
    await page.getByTestId("restore-session").click();
    await page.getByTestId("session").waitFor({ timeout: 30_000 });
    // The restored log holds the history again, with the restore's own events around it.
    await expect
      .poll(async () => Number(await page.getByTestId("session").getAttribute("data-events")))
      .toBeGreaterThan(Number(events));
    expect(await page.locator(".transcript").textContent()).toBe(transcript);

    await page.goto(`${base}/sessions/lc-ui-never-archived`);
    await page.getByTestId("restore-session").click();
    await expect
      .poll(() => page.getByTestId("restore-note").textContent())
      .toBe("restore failed: No archive of session lc-ui-never-archived");
  });
});
