// The console's Schedules page in a real browser (Chromium via playwright-core) against the real
// stack: next fires in the zone, fire now, the history of slot outcomes, pause and resume.
import { join } from "node:path";
import { fakeReply } from "@fleet/testkit";
import { describe, expect, it } from "vitest";
import { call } from "../gateway/support.js";
import { useConsoleStack } from "../support/console-stack.js";

const ROOT = join(import.meta.dirname, "..", "..");
const ui = useConsoleStack();

describe("console / schedules", () => {
  it("shows next fires and counts, fires now, lists the history, pauses and resumes", async () => {
    const created = await call(ui.base, "POST", "/v1/schedules", {
      body: {
        scheduleId: "nightly",
        spec: { kind: "cron", cron: "30 2 * * *", timezone: "Europe/Berlin" },
        target: { kind: "new_session", prompt: "nightly report" },
        overlap: "buffer_one",
      },
    });
    expect(created.status).toBe(201);
    await ui.page.goto(`${ui.base}/schedules`);
    const card = ui.page.getByTestId("schedule").filter({ hasText: "nightly" });
    await card.waitFor({ timeout: 15_000 });
    expect(await card.textContent()).toContain("cron 30 2 * * * (Europe/Berlin)");
    const next = await card.getByTestId("schedule-next").textContent();
    expect(next?.split(" · ")).toHaveLength(5);

    ui.stack.fake.script(fakeReply("report written"));
    await card.getByTestId("schedule-trigger").click();
    await expect
      .poll(() => card.getByTestId("schedule-counts").textContent(), { timeout: 15_000 })
      .toContain("1 fired");
    await card.locator("summary", { hasText: "history" }).click();
    const history = card.getByTestId("schedule-history");
    await expect.poll(() => history.locator("li").first().getAttribute("data-type")).toBe("schedule_fired");
    expect(await history.locator("li").first().textContent()).toMatch(
      /fired slot trigger \S+ → prompt sched\.nightly\.trigger\./,
    );

    await card.getByTestId("schedule-toggle").click();
    await expect.poll(() => card.getAttribute("data-state")).toBe("paused");
    expect(await card.getByTestId("schedule-next").textContent()).toBe("next: none");
    await ui.page.screenshot({ path: join(ROOT, "docs/screenshots/schedules.png") });
    await card.getByTestId("schedule-toggle").click();
    await expect.poll(() => card.getAttribute("data-state")).toBe("active");
    expect((await call(ui.base, "GET", "/v1/schedules/nightly")).body.paused).toBe(false);
  }, 60_000);
});
