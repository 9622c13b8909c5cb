import { describe, expect, it } from "vitest";
import { hasContainerRuntime, resolveBackend } from "./container-runtime.js";

describe("testkit / container runtime detection", () => {
  it("answers within seconds and caches the answer", async () => {
    // A bound against hanging, not a speed figure: on a loaded 2-core machine the probe took 1.9 s.
    const startedAt = performance.now();
    const first = await hasContainerRuntime();
    expect(performance.now() - startedAt).toBeLessThan(5_000);
    const again = performance.now();
    expect(await hasContainerRuntime()).toBe(first);
    expect(performance.now() - again).toBeLessThan(5);
  });

  it("names the apt package when a binary is missing and the process backend is required", async () => {
    await expect(resolveBackend("process", "fleet-no-such-server", "fleet-no-such-pkg")).rejects.toThrow(
      "apt-get install -y fleet-no-such-pkg",
    );
  });

  it("falls back to a container, or names the apt package, when the binary is missing in auto mode", async () => {
    const resolved = resolveBackend("auto", "fleet-no-such-server", "fleet-no-such-pkg");
    if (await hasContainerRuntime()) await expect(resolved).resolves.toEqual({ kind: "container" });
    else await expect(resolved).rejects.toThrow(/fleet-no-such-server was not found on PATH or in \/usr\/sbin/);
  });

  it("finds nats-server and redis-server (also in /usr/sbin, off a non-root PATH)", async () => {
    const original = process.env.PATH;
    process.env.PATH = "/usr/local/bin:/bin";
    try {
      expect(await resolveBackend("process", "nats-server", "nats-server")).toEqual({
        kind: "process",
        binary: expect.stringMatching(/\/nats-server$/),
      });
      expect(await resolveBackend("process", "redis-server", "redis-server")).toMatchObject({ kind: "process" });
    } finally {
      process.env.PATH = original;
    }
  });
});
