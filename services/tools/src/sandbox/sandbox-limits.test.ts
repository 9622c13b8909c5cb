// Resource limits and the environment of sandboxed processes, with real bwrap and small limits.
import { statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createBashTool } from "../builtin/bash.js";
import { processesMatching } from "../testing/find-processes.js";
import { createHarness, type Harness, textOf } from "../testing/tool-harness.js";
import { sandboxSettings } from "./sandbox-settings.js";

const MiB = 1024 * 1024;
const PROCESSES = 64;
const settings = sandboxSettings({
  limits: { cpuSeconds: 1, memoryBytes: 256 * MiB, fileBytes: 1 * MiB, processes: PROCESSES },
});
const bash = createBashTool();

describe("bash in the sandbox: limits", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness({ sandbox: settings });
    expect(h.ctx.sandbox.status).toMatchObject({ mode: "bwrap", limits: settings.limits });
  });
  afterEach(async () => {
    // The runner keeps serving: a plain command right after each test succeeds.
    expect(await h.run(bash, { command: "echo still-serving" })).toMatchObject({
      content: [{ type: "text", text: "still-serving\n" }],
    });
    await h.cleanup();
  });

  /** Runs `command` while sampling how many host processes carry `marker`; returns the result and the peak. */
  async function runSampling(command: string, marker: string, timeout?: number) {
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, processesMatching(marker).length);
    }, 20);
    try {
      const out = await h.run(bash, { command, ...(timeout ? { timeout } : {}) });
      return { out, text: textOf(out), peak };
    } finally {
      clearInterval(sampler);
    }
  }

  it(`a burst of 200 background processes stops at the process limit (${PROCESSES})`, async () => {
    const marker = `${process.pid}0${Date.now() % 100_000}`;
    const { out, text, peak } = await runSampling(
      `for i in $(seq 1 200); do sleep 30.${marker} & done; echo all-started`,
      marker,
      3,
    );
    // bash retries a refused fork (1 s, 2 s, ...) until the timeout ends the command.
    expect(text).toContain("fork: retry: Resource temporarily unavailable");
    expect(text).not.toContain("all-started");
    expect(out).toMatchObject({ isError: true, details: { timedOut: true } });
    expect(peak).toBeGreaterThan(PROCESSES / 2);
    expect(peak).toBeLessThanOrEqual(PROCESSES + 2);
    expect(processesMatching(marker)).toEqual([]);
  });

  it("a fork bomb is held at the process limit until the timeout ends it", async () => {
    const marker = `bomb${process.pid}x${Date.now() % 100_000}`;
    const t0 = Date.now();
    // The shell stays (sleep) so the bomb keeps going: when the shell ends, so does the sandbox.
    const { out, peak } = await runSampling(`: ${marker}; b() { b | b & }; b; sleep 10`, marker, 3);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(out).toMatchObject({ isError: true, details: { timedOut: true } });
    expect(peak).toBeGreaterThan(PROCESSES / 2);
    expect(peak).toBeLessThanOrEqual(PROCESSES + 2);
    expect(processesMatching(marker)).toEqual([]);
  });

  it("a memory hog fails to allocate past the address-space limit", async () => {
    const t0 = Date.now();
    // Doubles a string until an allocation fails (gawk: "cannot allocate", mawk: "out of memory").
    // With CPU time to spare: on a busy machine the copying can use up 1 s of CPU (SIGXCPU) first.
    const roomy = await createHarness({
      sandbox: sandboxSettings({ limits: { ...settings.limits, cpuSeconds: 20 } }),
    });
    const out = await roomy
      .run(bash, { command: `awk 'BEGIN { s = "x"; for (;;) s = s s }'` })
      .finally(() => roomy.cleanup());
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(out).toMatchObject({ isError: true, details: { exitCode: 2 } });
    expect(textOf(out)).toMatch(/cannot allocate \d+ bytes of memory|out of memory/);
  });

  it("a CPU spinner is stopped by the CPU-time limit (SIGXCPU)", async () => {
    const t0 = Date.now();
    const out = await h.run(bash, { command: "while :; do :; done" });
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(out).toMatchObject({ isError: true, details: { exitCode: 128 + 24 } });
  });

  it("a file cannot grow past the file-size limit (SIGXFSZ)", async () => {
    const out = await h.run(bash, { command: "head -c 3000000 /dev/zero > big.bin" });
    expect(textOf(out)).toContain("File size limit exceeded");
    expect(out).toMatchObject({ isError: true, details: { exitCode: 128 + 25 } });
    expect(statSync(join(h.root, "big.bin")).size).toBe(MiB);
  });
});

describe("bash in the sandbox: environment", () => {
  const secrets = { NATS_PASSWORD: "nats-secret-pw", ANTHROPIC_API_KEY: "sk-ant-secret", NATS_TOKEN: "tok-secret" };
  let h: Harness;
  beforeAll(() => {
    Object.assign(process.env, secrets);
  });
  afterAll(() => {
    for (const name of Object.keys(secrets)) delete process.env[name];
  });
  beforeEach(async () => {
    h = await createHarness();
  });
  afterEach(() => h.cleanup());

  it("holds only the sandbox's variables: nothing of the runner's environment", async () => {
    const text = textOf(await h.run(bash, { command: "env" }));
    for (const value of Object.values(secrets)) expect(text).not.toContain(value);
    const names = text
      .trim()
      .split("\n")
      .map((l) => l.slice(0, l.indexOf("=")))
      .sort();
    expect(names).toEqual(["HOME", "LANG", "PATH", "PWD", "SHLVL", "TERM", "TMPDIR", "_"]);
    expect(text).toContain(`HOME=${h.root}\n`);
  });

  it("passes a runner variable only when the settings list it (FLEET_SANDBOX_ENV)", async () => {
    const withEnv = await createHarness({
      sandbox: sandboxSettings({ env: { ...settings.env, NATS_TOKEN: "tok-secret" } }),
    });
    try {
      expect(textOf(await withEnv.run(bash, { command: 'echo "$NATS_TOKEN|$NATS_PASSWORD"' }))).toBe("tok-secret|\n");
    } finally {
      await withEnv.cleanup();
    }
  });
});
