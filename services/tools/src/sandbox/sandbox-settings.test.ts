import { describe, expect, it } from "vitest";
import { ToolsEnv } from "../config.js";
import { DEFAULT_SANDBOX_SETTINGS, sandboxSettingsFromEnv } from "./sandbox-settings.js";

describe("sandboxSettingsFromEnv", () => {
  it("defaults: bubblewrap, no network, the default limits and environment", () => {
    expect(sandboxSettingsFromEnv(ToolsEnv.parse({}), { NATS_PASSWORD: "pw" })).toEqual(DEFAULT_SANDBOX_SETTINGS);
  });

  it("reads every setting; passes only the runner variables FLEET_SANDBOX_ENV names", () => {
    const config = ToolsEnv.parse({
      FLEET_SANDBOX: "off",
      FLEET_SANDBOX_NETWORK: "allow",
      FLEET_SANDBOX_BWRAP: "/opt/bwrap",
      FLEET_SANDBOX_CPU_SECONDS: "10",
      FLEET_SANDBOX_MEMORY_MB: "512",
      FLEET_SANDBOX_FILE_MB: "2",
      FLEET_SANDBOX_MAX_PROCS: "32",
      FLEET_SANDBOX_RO_PATHS: "/opt/a, /opt/b",
      FLEET_SANDBOX_ENV: "GIT_AUTHOR_NAME,MISSING",
    });
    expect(
      sandboxSettingsFromEnv(config, { GIT_AUTHOR_NAME: "bot", NATS_PASSWORD: "pw", ANTHROPIC_API_KEY: "k" }),
    ).toEqual({
      mode: "off",
      network: "allow",
      bwrapPath: "/opt/bwrap",
      prlimitPath: "/usr/bin/prlimit",
      limits: { cpuSeconds: 10, memoryBytes: 512 * 1024 * 1024, fileBytes: 2 * 1024 * 1024, processes: 32 },
      readOnlyPaths: ["/opt/a", "/opt/b"],
      env: { ...DEFAULT_SANDBOX_SETTINGS.env, GIT_AUTHOR_NAME: "bot" },
    });
  });
});
