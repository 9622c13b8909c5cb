import { describe, expect, it } from "vitest";
import { buildMcpToolName } from "./mcp-tool-name.js";

describe("buildMcpToolName", () => {
  it("names a tool mcp__<server>__<tool> when that is short and clean", () => {
    expect(buildMcpToolName("everything", "echo")).toBe("mcp__everything__echo");
    expect(buildMcpToolName("fs", "read_text-file")).toBe("mcp__fs__read_text-file");
  });

  it("replaces characters outside [A-Za-z0-9_-] and adds a hash, so a.b and a_b stay apart", () => {
    const dotted = buildMcpToolName("srv", "files.read");
    const underscored = buildMcpToolName("srv", "files_read");
    expect(dotted).toMatch(/^mcp__srv__files_read_[0-9a-f]{8}$/);
    expect(underscored).toBe("mcp__srv__files_read");
    expect(dotted).not.toBe(underscored);
  });

  it("keeps long names to 64 characters with a hash, distinct for distinct tools", () => {
    const a = buildMcpToolName("server", `${"x".repeat(80)}-a`);
    const b = buildMcpToolName("server", `${"x".repeat(80)}-b`);
    expect(a).toHaveLength(64);
    expect(b).toHaveLength(64);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^mcp__server__x+_[0-9a-f]{8}$/);
    expect(buildMcpToolName("server", `${"x".repeat(80)}-a`)).toBe(a);
  });
});
