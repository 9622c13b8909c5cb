import { describe, expect, it } from "vitest";
import {
  bashExecutionToText,
  exportPiJsonl,
  FLEET_ACTIVE_TOOLS_CUSTOM_TYPE,
  importPiJsonl,
  piJsonlToImportCommand,
} from "./pi-jsonl.js";
import type { SessionEntry } from "./session-entry.js";

const T0 = Date.UTC(2025, 10, 29, 12, 0, 0, 0);
const usage = {
  input: 1,
  output: 2,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 3,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

const entries: SessionEntry[] = [
  { type: "model_change", id: "e1", parentId: null, timestamp: T0, provider: "anthropic", modelId: "m1" },
  {
    type: "message",
    id: "e2",
    parentId: "e1",
    timestamp: T0 + 1,
    message: { role: "user", content: [{ type: "text", text: "hi" }], timestamp: T0 + 1 },
  },
  {
    type: "message",
    id: "e3",
    parentId: "e2",
    timestamp: T0 + 2,
    message: {
      role: "assistant",
      content: [{ type: "text", text: "hello" }],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "m1",
      usage,
      stopReason: "stop",
      timestamp: T0 + 2,
    },
  },
  { type: "active_tools_change", id: "e4", parentId: "e3", timestamp: T0 + 3, toolNames: ["read"] },
  { type: "label", id: "e5", parentId: "e4", timestamp: T0 + 4, targetId: "e2", label: "start" },
  { type: "label", id: "e6", parentId: "e5", timestamp: T0 + 5, targetId: "e3", label: null },
  {
    type: "compaction",
    id: "e7",
    parentId: "e6",
    timestamp: T0 + 6,
    summary: "sum",
    firstKeptEntryId: "e3",
    tokensBefore: 100,
  },
  { type: "branch_summary", id: "e8", parentId: "e2", timestamp: T0 + 7, fromId: "e2", summary: "went back" },
  { type: "session_info", id: "e9", parentId: "e8", timestamp: T0 + 8, name: "My session" },
  { type: "custom", id: "e10", parentId: "e9", timestamp: T0 + 9, customType: "ext", data: { a: 1 } },
  {
    type: "custom_message",
    id: "e11",
    parentId: "e10",
    timestamp: T0 + 10,
    customType: "note",
    content: "remember",
    display: false,
  },
];

const lines = (text: string) =>
  text
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("exportPiJsonl", () => {
  it("writes pi's v3 header and entries with ISO timestamps and pi's field formats", () => {
    const text = exportPiJsonl({ sessionId: "s-1", createdAt: T0 - 1000, entries, leafId: "e11" });
    expect(text.endsWith("\n")).toBe(true);
    const [header, ...rest] = lines(text);
    expect(header).toEqual({ type: "session", version: 3, id: "s-1", timestamp: "2025-11-29T11:59:59.000Z", cwd: "" });
    expect(rest.map((e) => e.id)).toEqual(entries.map((e) => e.id));
    expect(rest[0]).toEqual({
      type: "model_change",
      id: "e1",
      parentId: null,
      timestamp: "2025-11-29T12:00:00.000Z",
      provider: "anthropic",
      modelId: "m1",
    });
    expect(Object.keys(rest[1] as object)).toEqual(["type", "id", "parentId", "timestamp", "message"]);
    expect((rest[1] as { message: { timestamp: unknown } }).message.timestamp).toBe(T0 + 1);
    expect(rest[3]).toEqual({
      type: "custom",
      id: "e4",
      parentId: "e3",
      timestamp: "2025-11-29T12:00:00.003Z",
      customType: FLEET_ACTIVE_TOOLS_CUSTOM_TYPE,
      data: { toolNames: ["read"] },
    });
    expect(rest[4]).toMatchObject({ type: "label", targetId: "e2", label: "start" });
    expect(rest[5]).toEqual({
      type: "label",
      id: "e6",
      parentId: "e5",
      timestamp: "2025-11-29T12:00:00.005Z",
      targetId: "e3",
    });
    expect(rest[6]).toEqual({
      type: "compaction",
      id: "e7",
      parentId: "e6",
      timestamp: "2025-11-29T12:00:00.006Z",
      summary: "sum",
      firstKeptEntryId: "e3",
      tokensBefore: 100,
    });
  });

  it("moves the leaf entry last so that pi's loader picks it as the leaf", () => {
    const text = exportPiJsonl({ sessionId: "s-1", createdAt: T0, entries, leafId: "e3" });
    const ids = lines(text)
      .slice(1)
      .map((e) => e.id);
    expect(ids).toEqual(["e1", "e2", "e4", "e5", "e6", "e7", "e8", "e9", "e10", "e11", "e3"]);
  });
});

describe("importPiJsonl", () => {
  it("round-trips an export: same entries, parents-first, same leaf", () => {
    for (const leafId of ["e11", "e3", "e1"]) {
      const parsed = importPiJsonl(exportPiJsonl({ sessionId: "s-1", createdAt: T0, entries, leafId }));
      expect(parsed.ok).toBe(true);
      if (!parsed.ok) return;
      expect(parsed.leafId).toBe(leafId);
      expect(parsed.header).toEqual({ id: "s-1", timestamp: T0, cwd: "" });
      expect([...parsed.entries].sort((a, b) => a.timestamp - b.timestamp)).toEqual(entries);
      const seen = new Set<string>();
      for (const e of parsed.entries) {
        if (e.parentId !== null) expect(seen.has(e.parentId)).toBe(true);
        seen.add(e.id);
      }
    }
  });

  it("maps pi's bashExecution and custom-role messages, empty labels and missing names", () => {
    const header = JSON.stringify({
      type: "session",
      version: 3,
      id: "p",
      timestamp: "2025-11-29T12:00:00.000Z",
      cwd: "/w",
    });
    const ts = "2025-11-29T12:00:01.000Z";
    const bash = { role: "bashExecution", command: "ls", output: "a", exitCode: 2, timestamp: 5 };
    const text = [
      header,
      JSON.stringify({ type: "message", id: "a1", parentId: null, timestamp: ts, message: bash }),
      JSON.stringify({
        type: "message",
        id: "a2",
        parentId: "a1",
        timestamp: ts,
        message: { ...bash, excludeFromContext: true },
      }),
      JSON.stringify({
        type: "message",
        id: "a3",
        parentId: "a2",
        timestamp: ts,
        message: { role: "custom", customType: "c", content: "x", display: true, timestamp: 6 },
      }),
      JSON.stringify({ type: "label", id: "a4", parentId: "a3", timestamp: ts, targetId: "a1", label: "" }),
      JSON.stringify({ type: "session_info", id: "a5", parentId: "a4", timestamp: ts }),
      "",
    ].join("\n");
    const parsed = importPiJsonl(text);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    const ms = Date.parse(ts);
    expect(parsed.entries).toEqual([
      {
        type: "custom_message",
        id: "a1",
        parentId: null,
        timestamp: ms,
        customType: "bashExecution",
        content: [{ type: "text", text: "Ran `ls`\n```\na\n```\n\nCommand exited with code 2" }],
        display: true,
        details: bash,
      },
      {
        type: "custom",
        id: "a2",
        parentId: "a1",
        timestamp: ms,
        customType: "bashExecution",
        data: { ...bash, excludeFromContext: true },
      },
      { type: "custom_message", id: "a3", parentId: "a2", timestamp: ms, customType: "c", content: "x", display: true },
      { type: "label", id: "a4", parentId: "a3", timestamp: ms, targetId: "a1", label: null },
      { type: "session_info", id: "a5", parentId: "a4", timestamp: ms, name: "" },
    ]);
    expect(parsed.header.cwd).toBe("/w");
    expect(bashExecutionToText({ role: "bashExecution", command: "x", cancelled: true, timestamp: 0 })).toBe(
      "Ran `x`\n(no output)\n\n(command cancelled)",
    );
  });

  it("takes the target of a trailing harness leaf line as the leaf", () => {
    const text = exportPiJsonl({ sessionId: "s-1", createdAt: T0, entries, leafId: "e11" });
    const parsed = importPiJsonl(`${text}${JSON.stringify({ type: "leaf", targetId: "e2" })}\n`);
    expect(parsed.ok && parsed.leafId).toBe("e2");
  });

  it("reports every malformed line with its number", () => {
    const good = exportPiJsonl({ sessionId: "s-1", createdAt: T0, entries: entries.slice(0, 3), leafId: "e3" });
    const [header, l1, l2, l3] = good.trimEnd().split("\n");
    const bad = [
      header,
      l1,
      "{not json",
      JSON.stringify({ type: "teleport", id: "x1", parentId: "e1", timestamp: "2025-11-29T12:00:00.000Z" }),
      JSON.stringify({ type: "label", id: "x2", parentId: "e1", timestamp: "yesterday", targetId: "e1" }),
      JSON.stringify({
        type: "thinking_level_change",
        id: "x3",
        parentId: "e1",
        timestamp: "2025-11-29T12:00:00.000Z",
        thinkingLevel: "max",
      }),
      l2,
      l2,
      l3,
    ].join("\n");
    const parsed = importPiJsonl(bad);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.issues.map((i) => i.line)).toEqual([3, 4, 5, 6, 8]);
    expect(parsed.issues[0]?.message).toMatch(/^not JSON/);
    expect(parsed.issues[1]?.message).toBe('unknown entry type "teleport"');
    expect(parsed.issues[2]?.message).toMatch(/timestamp: not an ISO-8601 timestamp/);
    expect(parsed.issues[3]?.message).toMatch(/thinkingLevel/);
    expect(parsed.issues[4]?.message).toBe("duplicate entry id e2 (first on line 7)");
    expect(parsed.error.split("\n")[0]).toMatch(/^line 3: not JSON/);
  });

  it("rejects a missing or wrong header, unknown parents and cycles", () => {
    expect(importPiJsonl("")).toMatchObject({ ok: false, issues: [{ line: 1, message: "missing session header" }] });
    const v2 = JSON.stringify({ type: "session", version: 2, id: "p", timestamp: "2025-11-29T12:00:00.000Z", cwd: "" });
    expect(importPiJsonl(v2)).toMatchObject({
      ok: false,
      issues: [{ line: 1, message: expect.stringMatching(/version 3/) }],
    });
    const h = JSON.stringify({ type: "session", version: 3, id: "p", timestamp: "2025-11-29T12:00:00.000Z", cwd: "" });
    const entry = (id: string, parentId: string | null) =>
      JSON.stringify({ type: "custom", id, parentId, timestamp: "2025-11-29T12:00:00.000Z", customType: "c" });
    expect(importPiJsonl([h, entry("a", null), entry("b", "zz")].join("\n"))).toMatchObject({
      ok: false,
      issues: [{ line: 3, message: "parentId zz is not an entry of the file" }],
    });
    expect(importPiJsonl([h, entry("a", "b"), entry("b", "a")].join("\n"))).toMatchObject({
      ok: false,
      issues: [{ line: 2, message: "the parent chain of a has a cycle" }],
    });
  });
});

describe("piJsonlToImportCommand", () => {
  it("builds a valid import_session command", () => {
    const text = exportPiJsonl({ sessionId: "s-1", createdAt: T0, entries, leafId: "e9" });
    const cmd = piJsonlToImportCommand(text, { id: "cmd-1", sessionId: "s-2", ts: T0 });
    expect(cmd.ok).toBe(true);
    if (!cmd.ok) return;
    expect(cmd.value.type).toBe("import_session");
    expect(cmd.value.sessionId).toBe("s-2");
    expect(cmd.value.leafId).toBe("e9");
    expect(cmd.value.entries).toHaveLength(entries.length);
    expect(piJsonlToImportCommand(text, { id: "cmd-1", sessionId: "bad id" })).toMatchObject({ ok: false });
  });
});
