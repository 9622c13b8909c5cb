import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../testing/tool-harness.js";
import { createWorkspaceFiles } from "./workspace-files.js";
import { createWorkspaceQuota, WorkspaceQuotaError } from "./workspace-quota.js";
import { measureWorkspace } from "./workspace-usage.js";

describe("workspace quota accounting", () => {
  it("measures once, then counts reservations until the usage is stale or forgotten", async () => {
    let measured = 0;
    let disk = 100;
    let now = 0;
    const quota = createWorkspaceQuota("/ws", 1_000, {
      staleAfterMs: 1_000,
      now: () => now,
      measure: async () => {
        measured++;
        return disk;
      },
    });
    expect(await quota.usage()).toBe(100);
    await quota.reserve(400, "writing a");
    expect(await quota.usage()).toBe(500);
    await expect(quota.reserve(501, "writing b")).rejects.toThrow(WorkspaceQuotaError);
    await expect(quota.reserve(501, "writing b")).rejects.toThrow(
      "Workspace quota exceeded: writing b would bring the workspace to 1001B of its 1000B quota",
    );
    await quota.reserve(-200, "shrinking a");
    expect(await quota.usage()).toBe(300);
    expect(measured).toBe(1);
    disk = 700;
    now = 1_000;
    expect(await quota.usage()).toBe(700);
    quota.invalidate();
    disk = 50;
    expect(await quota.usage()).toBe(50);
    expect(measured).toBe(3);
  });

  it("a negative change is always allowed, even over the quota", async () => {
    const quota = createWorkspaceQuota("/ws", 10, { measure: async () => 50 });
    await quota.reserve(-5, "edit");
    expect(await quota.usage()).toBe(45);
  });
});

describe("workspace quota in the file tools", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness();
  });
  afterEach(() => h.cleanup());

  it("measures files, directories and links; refuses a write past the quota before creating the file", async () => {
    await writeFile(join(h.root, "a.bin"), Buffer.alloc(10_000));
    const used = await measureWorkspace(h.root);
    expect(used).toBeGreaterThanOrEqual(10_000);
    const files = createWorkspaceFiles(h.root, createWorkspaceQuota(h.root, used + 5_000));
    await files.writeFile("b.bin", Buffer.alloc(4_000));
    await expect(files.writeFile("c.bin", Buffer.alloc(4_000))).rejects.toThrow(/Workspace quota exceeded/);
    expect(await files.stat("c.bin")).toBeNull();
    // Overwriting with less is a shrink, always allowed; growing an existing file is charged the difference.
    await files.writeFile("a.bin", Buffer.alloc(1_000));
    await files.writeFile("b.bin", Buffer.alloc(8_000));
    await expect(files.replaceFile("b.bin", () => Buffer.alloc(30_000))).rejects.toThrow(/Workspace quota exceeded/);
    expect((await files.stat("b.bin"))?.size).toBe(8_000);
  });
});
