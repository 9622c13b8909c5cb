// The console as an operator's tool, in Chromium against the real stack: a run's waterfall (the same
// rows as `fleet trace`) linked from the transcript and following the replay; times people read; the
// session tree as a graph; the tenant's daily budget; model, thinking, compaction, export and import.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { formatDuration, formatSpend, layoutWaterfall, type SessionEntry } from "@fleet/protocol";
import { fakeReply, fakeText, fakeToolUse } from "@fleet/testkit";
import { describe, expect, it } from "vitest";
import { call } from "../gateway/support.js";
import { useConsoleStack } from "../support/console-stack.js";
import { ROOT } from "./browser.js";

const SHOTS = join(ROOT, "docs/screenshots");
const ui = useConsoleStack();
/** A session with two runs: a tool call then a reply, and a plain reply. */
let traced = "";

const shot = (name: string) => ui.page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const sessionIdOfUrl = () => decodeURIComponent(new URL(ui.page.url()).pathname.split("/")[2] ?? "");

async function prompt(sessionId: string, text: string, messages: number): Promise<void> {
  await call(ui.base, "POST", `/v1/sessions/${sessionId}/commands`, { body: { type: "prompt", text } });
  await expect
    .poll(
      async () => {
        const state = (await call(ui.base, "GET", `/v1/sessions/${sessionId}`)).body;
        return `${state.status} ${state.messages.length}`;
      },
      { timeout: 20_000 },
    )
    .toBe(`idle ${messages}`);
}

/** The 0-based position of the first event of `type` in a session's log. */
async function positionOf(sessionId: string, type: string): Promise<number> {
  const { text } = await call(ui.base, "GET", `/v1/sessions/${sessionId}/events?follow=false`);
  const frames = text.split("\n\n").filter((f) => f.includes("id: "));
  return frames.findIndex((f) => f.includes(`event: ${type}\n`));
}

/** Each waterfall row on the page: span name, kind, open, duration and usage text. */
const waterfallRows = () =>
  ui.page.getByTestId("waterfall-row").evaluateAll((rows) =>
    rows.map((r) => ({
      name: r.getAttribute("data-name"),
      kind: r.getAttribute("data-kind"),
      open: r.getAttribute("data-open"),
      duration: r.querySelector("[data-testid=waterfall-duration]")?.textContent,
      usage: r.querySelector("[data-testid=waterfall-usage]")?.textContent,
    })),
  );

describe("console / run waterfall", () => {
  it("links each run from the transcript to its waterfall, the same rows as `fleet trace`", async () => {
    const created = await call(ui.base, "POST", "/v1/sessions", {
      body: { config: { model: { provider: "anthropic", modelId: "claude-sonnet-4-6" } } },
    });
    traced = created.body.sessionId as string;
    ui.stack.fake.script(
      fakeReply([fakeText("Let me list the workspace."), fakeToolUse("ls", { path: "." }, { id: "toolu_wf_ls" })], {
        eventDelayMs: 60,
      }),
      fakeReply("The workspace is empty.", { eventDelayMs: 40 }),
      fakeReply("Nothing else to do.", { eventDelayMs: 30 }),
    );
    await prompt(traced, "list the files", 4);
    await prompt(traced, "anything else?", 6);

    await ui.page.goto(`${ui.base}/sessions/${traced}`);
    const links = ui.page.getByTestId("run-link");
    await expect.poll(() => links.count(), { timeout: 15_000 }).toBe(2);
    const spans = await ui.stack.client.trace(traced);
    const runIds = [...new Set(spans.map((s) => s.runId))];
    expect(await links.evaluateAll((ls) => ls.map((l) => l.getAttribute("data-run-id")))).toEqual(runIds);

    await links.first().click();
    await ui.page.waitForURL(`${ui.base}/sessions/${traced}/runs/${runIds[0]}`);
    await ui.page.getByTestId("waterfall").waitFor();
    // `fleet trace` draws `layoutWaterfall` of the SDK's spans: the page shows the same rows.
    const expected = layoutWaterfall(spans.filter((s) => s.runId === runIds[0]));
    expect(expected).toBeDefined();
    const rows = await waterfallRows();
    expect(rows.map((r) => r.name)).toEqual(expected?.rows.map((r) => r.span.name));
    expect(rows.map((r) => r.duration)).toEqual(expected?.rows.map((r) => formatDuration(r.durationMs)));
    expect(rows.map((r) => r.kind)).toEqual(["other", "llm", "tool", "llm"]);
    expect(rows.map((r) => r.name)).toEqual([
      "invoke_agent fleet",
      "chat claude-sonnet-4-6",
      "execute_tool ls",
      "chat claude-sonnet-4-6",
    ]);
    expect(rows.every((r) => r.open === "false")).toBe(true);
    const chat = expected?.rows[1];
    expect(chat?.tokens?.output).toBeGreaterThan(0);
    expect(rows[1]?.usage).toContain(`${chat?.tokens?.input} in / ${chat?.tokens?.output} out`);
    expect(rows[1]?.usage).toContain("ttft");
    expect(await ui.page.getByTestId("run-row").count()).toBe(2);
    await shot("waterfall");

    // The run list picks the other run.
    await ui.page.getByTestId("run-row").nth(1).locator("a").click();
    await ui.page.waitForURL(`${ui.base}/sessions/${traced}/runs/${runIds[1]}`);
    await expect
      .poll(async () => (await waterfallRows()).map((r) => r.name))
      .toEqual(["invoke_agent fleet", "chat claude-sonnet-4-6"]);
    // Back goes to the first run's waterfall, then to the transcript.
    await ui.page.goBack();
    await expect.poll(() => ui.page.getByTestId("waterfall").getAttribute("data-run-id")).toBe(runIds[0]);
    await ui.page.goBack();
    await ui.page.getByTestId("transcript").waitFor();
    expect(new URL(ui.page.url()).pathname).toBe(`/sessions/${traced}`);
  });

  it("keeps working in replay: scrubbed mid-run, the waterfall is the run as it stood", async () => {
    await ui.page.goto(`${ui.base}/sessions/${traced}`);
    await ui.page.getByTestId("run-link").first().click();
    await ui.page.getByTestId("waterfall").waitFor();
    const end = await positionOf(traced, "tool_execution_end");
    expect(end).toBeGreaterThan(0);
    // `end` events folded: the tool call started and has not ended.
    await ui.page.getByTestId("slider").fill(String(end));
    await expect.poll(() => ui.page.getByTestId("session").getAttribute("data-at")).toBe(String(end));
    await expect
      .poll(async () => (await waterfallRows()).map((r) => `${r.name}:${r.open}`))
      .toEqual(["invoke_agent fleet:true", "chat claude-sonnet-4-6:false", "execute_tool ls:true"]);
    expect(await ui.page.getByTestId("waterfall-running").count()).toBe(1);
    // Before the run started, the run is not there yet.
    await ui.page.getByTestId("slider").fill("1");
    await expect.poll(() => ui.page.getByTestId("no-runs").textContent()).toContain("at this point of the replay");
    await ui.page.getByTestId("live").click();
    await expect.poll(async () => (await waterfallRows()).length).toBe(4);
    expect(await ui.page.getByTestId("waterfall-running").count()).toBe(0);
  });

  it("follows a run live: the latest run's waterfall grows while it runs, then closes", async () => {
    await ui.page.goto(`${ui.base}/sessions/${traced}/runs`);
    await ui.page.getByTestId("waterfall").waitFor();
    const before = await ui.page.getByTestId("waterfall").getAttribute("data-run-id");
    const words = Array.from({ length: 20 }, (_, i) => `w${i} `);
    ui.stack.fake.script(fakeReply([fakeText(words.join(""), words)], { eventDelayMs: 100 }));
    await call(ui.base, "POST", `/v1/sessions/${traced}/commands`, { body: { type: "prompt", text: "a slow one" } });
    await expect.poll(() => ui.page.getByTestId("waterfall-running").count(), { timeout: 10_000 }).toBe(1);
    expect(await ui.page.getByTestId("waterfall").getAttribute("data-run-id")).not.toBe(before);
    await expect
      .poll(async () => (await waterfallRows()).map((r) => `${r.name}:${r.open}`))
      .toEqual(["invoke_agent fleet:true", "chat claude-sonnet-4-6:true"]);
    await expect.poll(() => ui.page.getByTestId("waterfall-running").count(), { timeout: 15_000 }).toBe(0);
    expect((await waterfallRows()).map((r) => `${r.name}:${r.open}`)).toEqual([
      "invoke_agent fleet:false",
      "chat claude-sonnet-4-6:false",
    ]);
    expect(await ui.page.getByTestId("run-row").count()).toBe(3);
  });
});

describe("console / operator views", () => {
  it("shows last activity relative, with the absolute time on hover, never a raw epoch", async () => {
    await ui.page.goto(`${ui.base}/`);
    const row = ui.page.getByTestId("session-row").filter({ hasText: traced });
    const when = row.getByTestId("last-activity");
    await when.waitFor();
    const listed = (await call(ui.base, "GET", "/v1/sessions?limit=100")).body.sessions as {
      sessionId: string;
      updatedAt: number;
    }[];
    const updatedAt = listed.find((s) => s.sessionId === traced)?.updatedAt as number;
    expect(await when.getAttribute("data-ts")).toBe(String(updatedAt));
    expect(await when.textContent()).toMatch(/^(just now|\d+ s ago|\d+ min ago)$/);
    expect(await row.textContent()).not.toContain(String(updatedAt));
    // The tooltip: the local wall time (the browser runs in UTC here) and the ISO instant.
    const local = new Date(updatedAt).toISOString();
    expect(await when.getAttribute("title")).toBe(`${local.slice(0, 10)} ${local.slice(11, 19)} UTC`);
    expect(await when.getAttribute("datetime")).toBe(local);
  });

  it("shows the tenant's daily spend against its limits, and sets the limits", async () => {
    const before = (await call(ui.base, "GET", "/v1/budget")).body;
    expect(before.limits).toBeNull();
    await ui.page.goto(`${ui.base}/`);
    await expect.poll(() => ui.page.getByTestId("tenant-spend").textContent()).toBe(formatSpend(before.total));
    expect(await ui.page.getByTestId("tenant-limits").textContent()).toBe("daily limit: none");
    const limit = before.total.totalTokens * 4;
    await ui.page.getByTestId("edit-budget").click();
    await ui.page.getByTestId("budget-tokens").fill(String(limit));
    await ui.page.getByTestId("budget-cost").fill("2.5");
    await ui.page.getByTestId("save-budget").click();
    await expect
      .poll(() => ui.page.getByTestId("tenant-limits").textContent())
      .toBe(`daily limit: total ≤ ${limit}, $ ≤ 2.5000`);
    expect((await call(ui.base, "GET", "/v1/budget")).body.limits).toEqual({ totalTokens: limit, costUsd: 2.5 });
    const meter = ui.page.getByTestId("budget-meter-totalTokens");
    const now = (await call(ui.base, "GET", "/v1/budget")).body.total;
    expect(Number(await meter.getAttribute("data-share"))).toBeCloseTo(now.totalTokens / limit, 3);
    expect(await meter.textContent()).toContain(`${now.totalTokens} of ${limit} (25%)`);
    expect(await ui.page.getByTestId("budget-meter-costUsd").count()).toBe(1);
    await shot("budget");
    // Blank fields: no limits.
    await ui.page.getByTestId("edit-budget").click();
    await ui.page.getByTestId("budget-tokens").fill("");
    await ui.page.getByTestId("budget-cost").fill("");
    await ui.page.getByTestId("save-budget").click();
    await expect.poll(() => ui.page.getByTestId("tenant-limits").textContent()).toBe("daily limit: none");
    expect((await call(ui.base, "GET", "/v1/budget")).body.limits).toBeNull();
  });

  it("draws the session tree as a graph: branches as lanes, labels, the leaf, compaction", async () => {
    const sessionId = "s-console-graph";
    const user = (id: string, parentId: string | null, text: string): SessionEntry => ({
      type: "message",
      id,
      parentId,
      timestamp: 1_700_000_000_000,
      message: { role: "user", content: text, timestamp: 1_700_000_000_000 },
    });
    //  q1 ─ q2 ─ q3 ─ [compaction, kept q3] ─ q4 (leaf)
    //        └─ alt1 ─ alt2 ─ [label q2]
    const entries: SessionEntry[] = [
      user("q1", null, "first question"),
      user("q2", "q1", "second question"),
      user("q3", "q2", "third question"),
      user("alt1", "q2", "another way"),
      user("alt2", "alt1", "and on"),
      {
        type: "compaction",
        id: "c1",
        parentId: "q3",
        timestamp: 1_700_000_000_000,
        summary: "The user asked two questions.",
        firstKeptEntryId: "q3",
        tokensBefore: 5400,
      },
      user("q4", "c1", "after the summary"),
      { type: "label", id: "l1", parentId: "alt2", timestamp: 1_700_000_000_000, targetId: "q2", label: "fork point" },
    ];
    await ui.stack.client.importSession({ entries, leafId: "q4" }, { sessionId, timeoutMs: 30_000 });
    await ui.page.goto(`${ui.base}/sessions/${sessionId}`);
    await ui.page.getByTestId("tree-tab").click();
    const nodes = ui.page.getByTestId("tree-entry");
    await expect.poll(() => nodes.count(), { timeout: 15_000 }).toBe(8);
    const facts = await nodes.evaluateAll((gs) =>
      gs.map((g) => ({
        text: g.querySelector("text")?.textContent ?? "",
        lane: g.getAttribute("data-lane"),
        kind: g.getAttribute("data-kind"),
        onPath: g.getAttribute("data-on-path"),
        compacted: g.getAttribute("data-compacted"),
      })),
    );
    const of = (needle: string) => facts.find((f) => f.text.includes(needle));
    // The branch has a lane of its own, entered by a fork edge.
    expect(new Set(facts.map((f) => f.lane)).size).toBe(2);
    expect(of("another way")?.lane).not.toBe(of("third question")?.lane);
    expect(await ui.page.locator("[data-testid=tree-edge][data-fork=true]").count()).toBe(1);
    expect(of("second question")?.text).toContain("forks into 2 branches");
    // The label is a tag on its entry; the leaf is marked; the other branch is off the active path.
    expect(of("second question")?.text).toMatch(/^fork point/);
    expect(await ui.page.getByTestId("tree-label").count()).toBe(1);
    expect(of("after the summary")?.text).toContain("◀ leaf");
    expect([of("another way")?.onPath, of("after the summary")?.onPath]).toEqual(["false", "true"]);
    // The compaction is its own node; what it summarized (before the kept entry) is marked.
    expect(of("compaction (5400 tokens before)")?.kind).toBe("compaction");
    expect(facts.filter((f) => f.compacted === "true").map((f) => f.text)).toEqual([
      "user: first question",
      "fork pointuser: second question · forks into 2 branches",
    ]);
    expect(await ui.page.getByTestId("tree-summary").textContent()).toBe(
      "8 entries · 2 branches · 1 label · 1 compaction",
    );
    await shot("tree-graph");
  });

  it("sets compaction, compacts, sets the model and thinking level, exports and imports", async () => {
    await ui.page.goto(`${ui.base}/sessions/${traced}`);
    await ui.page.getByTestId("settings-tab").click();
    // Compaction settings: keep almost nothing, so that a compaction now summarizes the first run.
    await ui.page.getByTestId("compaction-enabled").uncheck();
    await ui.page.getByTestId("compaction-keep").fill("1");
    await ui.page.getByTestId("compaction-keep").fill("x1");
    expect(await ui.page.getByTestId("save-compaction").isDisabled()).toBe(true);
    await ui.page.getByTestId("compaction-keep").fill("1");
    await ui.page.getByTestId("save-compaction").click();
    await expect.poll(() => ui.page.getByTestId("settings-note").textContent()).toBe("compaction settings saved");
    const state = async () => (await call(ui.base, "GET", `/v1/sessions/${traced}`)).body;
    await expect
      .poll(async () => (await state()).config.compaction)
      .toEqual({ enabled: false, reserveTokens: 16_384, keepRecentTokens: 1 });
    // The cut falls inside the last turn: pi summarizes the history and the turn's prefix apart.
    ui.stack.fake.script(fakeReply("SUMMARY: the user listed an empty workspace."), fakeReply("SUMMARY: a prefix."));
    await ui.page.getByTestId("compact-now").click();
    await expect.poll(() => ui.page.getByTestId("settings-note").textContent()).toBe("compaction asked");
    await ui.page.getByTestId("tree-tab").click();
    await expect
      .poll(() => ui.page.locator("[data-testid=tree-entry][data-kind=compaction]").count(), { timeout: 15_000 })
      .toBe(1);
    await expect
      .poll(() => ui.page.locator("[data-testid=tree-entry][data-compacted=true]").count())
      .toBeGreaterThan(0);

    await ui.page.getByTestId("settings-tab").click();
    await ui.page.getByTestId("model-id").fill("claude-opus-4-7");
    await ui.page.getByTestId("set-model").click();
    await expect.poll(() => ui.page.getByTestId("current-model").textContent()).toBe("now anthropic/claude-opus-4-7");
    await expect.poll(async () => (await state()).model).toEqual({ provider: "anthropic", modelId: "claude-opus-4-7" });
    await ui.page.getByTestId("thinking-level").selectOption("high");
    await expect.poll(async () => (await state()).thinkingLevel).toBe("high");
    // The select shows the folded log's level: "high" once the change's event reached the page.
    await expect.poll(() => ui.page.getByTestId("thinking-level").inputValue()).toBe("high");
    await shot("settings");

    const download = ui.page.waitForEvent("download");
    await ui.page.getByTestId("export").click();
    const file = await (await download).path();
    const exported = readFileSync(file, "utf8");
    expect(exported).toBe((await call(ui.base, "GET", `/v1/sessions/${traced}/export`)).text);
    await expect
      .poll(() => ui.page.getByTestId("settings-note").textContent())
      .toBe(`exported ${Buffer.byteLength(exported)} bytes`);

    await ui.page.goto(`${ui.base}/`);
    await ui.page.getByTestId("import-file").setInputFiles(file);
    await expect.poll(() => sessionIdOfUrl(), { timeout: 15_000 }).not.toBe("");
    const imported = sessionIdOfUrl();
    expect(imported).not.toBe(traced);
    await expect
      .poll(() => ui.page.getByTestId("transcript").textContent(), { timeout: 15_000 })
      .toContain("anything else?");
    const roles = (body: { messages: { role: string }[] }) => body.messages.map((m) => m.role);
    const original = roles(await state());
    expect(original.length).toBeGreaterThan(0);
    await expect
      .poll(async () => roles((await call(ui.base, "GET", `/v1/sessions/${imported}`)).body))
      .toEqual(original);
    // A file that is not a pi session is refused with the gateway's reason.
    await ui.page.goto(`${ui.base}/`);
    await ui.page.getByTestId("import-file").setInputFiles({
      name: "bad.jsonl",
      mimeType: "application/jsonl",
      buffer: Buffer.from("not json\n"),
    });
    await expect.poll(() => ui.page.getByTestId("import-note").textContent()).toContain("not a pi v3 session file");
  });

  it("draws all of it (SVG bars and meters, the export download) under the strict Content-Security-Policy", () => {
    expect(ui.cspViolations).toEqual([]);
  });
});
