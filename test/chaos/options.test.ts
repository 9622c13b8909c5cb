import { describe, expect, it } from "vitest";
import { FAULT_KINDS } from "./fault-schedule.js";
import { parseOptions } from "./options.js";

describe("chaos options", () => {
  it("draws every fault kind on one server, all but storage_full on a cluster unless --faults names it", () => {
    const single = parseOptions([], 1);
    const cluster = parseOptions(["--cluster"], 1);
    const asked = parseOptions(["--cluster", "--faults", "storage_full,kill_loop"], 1);
    if ("error" in single || "error" in cluster || "error" in asked) throw new Error("parse failed");
    expect(single.kinds).toEqual([...FAULT_KINDS]);
    expect(cluster.kinds).toEqual(FAULT_KINDS.filter((k) => k !== "storage_full"));
    expect([cluster.groups, single.groups]).toEqual([3, 1]);
    expect(asked.kinds).toEqual(["storage_full", "kill_loop"]);
  });
});
