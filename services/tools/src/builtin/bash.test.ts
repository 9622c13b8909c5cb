import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sandboxSettings } from "../sandbox/sandbox-settings.js";
import { processesMatching } from "../testing/find-processes.js";
import { createHarness, type Harness, textOf } from "../testing/tool-harness.js";
import { createBashTool } from "./bash.js";

async function waitFor(cond: () => boolean, ms = 5_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("bash", () => {
  let h: Harness;
  const bash = createBashTool();
  beforeEach(async () => {
    h = await createHarness();
  });
  afterEach(() => h.cleanup());

  it("runs in the workspace and returns output and exit code 0", async () => {
    const out = await h.run(bash, { command: "pwd; echo out; echo err >&2" });
    expect(out).toEqual({ content: [{ type: "text", text: `${h.root}\nout\nerr\n` }], details: { exitCode: 0 } });
  });

  it("says (no output) for a silent command", async () => {
    expect(await h.run(bash, { command: "true" })).toEqual({
      content: [{ type: "text", text: "(no output)" }],
      details: { exitCode: 0 },
    });
  });

  it("returns a non-zero exit code as an error result with details", async () => {
    const out = await h.run(bash, { command: "echo failing; exit 3" });
    expect(out).toEqual({
      content: [{ type: "text", text: "failing\n\n\nCommand exited with code 3" }],
      details: { exitCode: 3 },
      isError: true,
    });
  });

  it("times out, killing the command", async () => {
    const t0 = Date.now();
    const out = await h.run(bash, { command: "echo started; sleep 10", timeout: 0.3 });
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(out.isError).toBe(true);
    expect(textOf(out)).toBe("started\n\n\nCommand timed out after 0.3 seconds");
    expect(out.details).toEqual({ exitCode: null, signal: "SIGTERM", timedOut: true });
  });

  it("abort kills every process of the command, grandchildren included", async () => {
    const marker = `${process.pid}${Date.now() % 100_000}`;
    const pending = h.run(bash, { command: `sleep 30.${marker} & (sleep 31.${marker} &); sleep 32.${marker}` });
    await waitFor(() => processesMatching(new RegExp(`^sleep 3[012]\\.${marker}$`)).length === 3);
    h.controller.abort();
    await expect(pending).rejects.toThrow("Command aborted");
    expect(processesMatching(marker)).toEqual([]);
  });

  it("kills a TERM-ignoring group with SIGKILL after the grace", async () => {
    const quick = createBashTool({ killGraceMs: 100 });
    const pending = h.run(quick, { command: "trap '' TERM; echo ready; sleep 30 & wait" });
    await waitFor(() => h.updates.length > 0);
    h.controller.abort();
    await expect(pending).rejects.toThrow(/Command aborted$/);
  });

  it("background processes do not outlive their command", async () => {
    const marker = `${process.pid}${Date.now() % 100_000}`;
    // The shell ends only once both are running (pgrep sees the sandbox's own /proc).
    const out = await h.run(bash, {
      command: `sleep 33.${marker} & (sleep 34.${marker} &); until pgrep -f '^sleep 34' >/dev/null; do sleep 0.01; done; echo started`,
    });
    expect(textOf(out)).toBe("started\n");
    expect(processesMatching(marker)).toEqual([]);
  });

  it("caps output with a note and stores the full output in the blob store", async () => {
    const out = await h.run(bash, { command: "seq 1 100000" });
    const text = textOf(out);
    const full = `${Array.from({ length: 100000 }, (_, i) => i + 1).join("\n")}\n`;
    expect(text.startsWith("98002\n")).toBe(true);
    expect(
      text.endsWith(
        "\n100000\n\n\n[Showing lines 98002-100001 of 100001. Full output: blob fleet_blobs/bash-output.txt (575.1KB)]",
      ),
    ).toBe(true);
    expect(Buffer.byteLength(text)).toBeLessThan(52 * 1024);
    const details = out.details as { exitCode: number; fullOutput: { name: string; size: number } };
    expect(details.exitCode).toBe(0);
    expect(details.fullOutput).toMatchObject({ bucket: "fleet_blobs", name: "bash-output.txt", size: full.length });
    expect(new TextDecoder().decode(h.blobs.blobs.get("bash-output.txt"))).toBe(full);
  });

  it("streams progress as updates", async () => {
    await h.run(bash, { command: "for i in 1 2 3 4; do echo tick$i; sleep 0.15; done" });
    expect(h.updates.length).toBeGreaterThanOrEqual(3);
    const texts = h.updates.map((u) => (u as { content: Array<{ text: string }> }).content[0]?.text ?? "");
    expect(texts[0]).toBe("tick1\n");
    expect(texts.at(-1)).toBe("tick1\ntick2\ntick3\ntick4\n");
  });

  it("rejects a missing command", async () => {
    await expect(h.run(bash, {})).rejects.toThrow(
      'Validation failed for tool "bash":\n  - command: Invalid input: expected string, received undefined',
    );
  });
});

describe("bash without a working sandbox", () => {
  const bash = createBashTool();

  it("refuses with an error naming the failed check when bwrap is missing", async () => {
    const h = await createHarness({ sandbox: sandboxSettings({ bwrapPath: "/nonexistent/bwrap" }) });
    try {
      expect(h.ctx.sandbox.status).toEqual({
        mode: "unavailable",
        check: "bwrap",
        reason: "/nonexistent/bwrap is not an executable file",
      });
      await expect(h.run(bash, { command: `echo ran > ${h.root}/ran.txt` })).rejects.toThrow(
        "bash cannot run: the process sandbox is unavailable (check bwrap: /nonexistent/bwrap is not an executable file). " +
          "Install bubblewrap (apt-get install bubblewrap), or set FLEET_SANDBOX=off on the tool runner to run processes without a sandbox.",
      );
      expect(existsSync(join(h.root, "ran.txt"))).toBe(false);
    } finally {
      await h.cleanup();
    }
  });

  it("runs unconfined only when the sandbox is explicitly off, still with the sandbox's environment", async () => {
    const h = await createHarness({ sandbox: sandboxSettings({ mode: "off" }) });
    process.env.FLEET_TEST_SECRET = "s3cret";
    try {
      expect(h.ctx.sandbox.status).toEqual({ mode: "off" });
      const out = await h.run(bash, { command: `echo out > ${h.outside}/off.txt; echo "[$FLEET_TEST_SECRET]"` });
      expect(textOf(out)).toBe("[]\n");
      expect(readFileSync(join(h.outside, "off.txt"), "utf-8")).toBe("out\n");
    } finally {
      delete process.env.FLEET_TEST_SECRET;
      await h.cleanup();
    }
  });
});
