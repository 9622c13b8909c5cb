import { describe, expect, it } from "vitest";
import { assistantMessage, textOf, toolCall, toolResultMessage, userMessage } from "../../fixtures/builders.js";
import type { AgentMessage, AssistantMessage, ContextMessage } from "../messages.js";
import type { SessionEntry } from "../session-entry.js";
import {
  computeFileLists,
  findCutPoint,
  findTurnStartIndex,
  formatFileLists,
  prepareCompaction,
  shouldCompact,
} from "./compaction.js";
import { convertToLlm } from "./convert-to-llm.js";
import { serializeConversation } from "./serialize-conversation.js";
import { estimateContextTokens, estimateTokens } from "./token-estimate.js";

/** `n` tokens of text (4n characters). */
const tokens = (n: number) => "x".repeat(4 * n);
const u = (n: number) => userMessage(tokens(n));
const a = (n: number, calls: ReturnType<typeof toolCall>[] = []) => assistantMessage([textOf(tokens(n)), ...calls]);
const r = (id: string, n: number) => toolResultMessage(id, "read", tokens(n));
/** An assistant message whose usage reports `total` context tokens. */
const withTotal = (m: AssistantMessage, total: number): AssistantMessage => ({
  ...m,
  usage: { ...m.usage, input: total, totalTokens: total },
});

type RawEntry = { entry: Omit<SessionEntry, "id" | "parentId" | "timestamp"> };
type EntryInput = AgentMessage | RawEntry;
const isRawEntry = (item: EntryInput): item is RawEntry => !("role" in item);

/** A root→leaf path: entry i has id `e<i>`, parent `e<i-1>`, timestamp 1000 + i. */
function pathOf(items: EntryInput[]): SessionEntry[] {
  return items.map((item, i) => {
    const base = { id: `e${i}`, parentId: i === 0 ? null : `e${i - 1}`, timestamp: 1000 + i };
    if (isRawEntry(item)) return { ...item.entry, ...base } as SessionEntry;
    return { type: "message", ...base, message: item } as SessionEntry;
  });
}
const setting = { entry: { type: "thinking_level_change", thinkingLevel: "high" } } as EntryInput;
const model = { entry: { type: "model_change", provider: "openai", modelId: "gpt-5" } } as EntryInput;

describe("estimateTokens", () => {
  it("counts chars/4, rounded up, by pi's rules per role", () => {
    expect(estimateTokens(userMessage("12345"))).toBe(2);
    expect(estimateTokens({ role: "user", content: "abcd", timestamp: 0 })).toBe(1);
    expect(
      estimateTokens({
        role: "user",
        content: [textOf("abcd"), { type: "image", data: "AAAA", mimeType: "image/png" }],
        timestamp: 0,
      }),
    ).toBe(1); // user images are ignored
    const withCall = assistantMessage([
      textOf("abcd"),
      { type: "thinking", thinking: "efgh" },
      toolCall("t", "read", { path: "a" }),
    ]);
    // 4 + 4 + "read".length 4 + '{"path":"a"}'.length 12 = 24 chars
    expect(estimateTokens(withCall)).toBe(6);
    const result = {
      ...toolResultMessage("t", "read", "abcd"),
      content: [textOf("abcd"), { type: "image" as const, data: "", mimeType: "image/png" }],
    };
    expect(estimateTokens(result)).toBe(Math.ceil((4 + 4800) / 4));
    expect(estimateTokens({ role: "custom", customType: "c", content: "abcdefgh", display: true, timestamp: 0 })).toBe(
      2,
    );
    expect(estimateTokens({ role: "compactionSummary", summary: "abc", tokensBefore: 1, timestamp: 0 })).toBe(1);
    expect(estimateTokens({ role: "branchSummary", summary: "", fromId: "root", timestamp: 0 })).toBe(0);
  });
});

describe("estimateContextTokens", () => {
  const withUsage = (total: number, stopReason: AssistantMessage["stopReason"] = "stop"): AssistantMessage => {
    const m = assistantMessage([textOf("x")], { stopReason, tokens: total });
    return m;
  };

  it("uses the last usable assistant usage plus estimates of what follows", () => {
    const messages: ContextMessage[] = [u(10), withUsage(1000), u(5), withUsage(99, "aborted"), u(7)];
    // aborted assistant is skipped: its own estimate (ceil(1/4) = 1) is part of the trailing sum
    expect(estimateContextTokens(messages)).toEqual({
      tokens: 1000 + 5 + 1 + 7,
      usageTokens: 1000,
      trailingTokens: 13,
      lastUsageIndex: 1,
    });
  });

  it("falls back to the sum of usage parts when totalTokens is 0, and to estimates without usage", () => {
    const m = withUsage(0);
    m.usage = { ...m.usage, input: 10, output: 5, cacheRead: 3, cacheWrite: 2, totalTokens: 0 };
    expect(estimateContextTokens([m]).tokens).toBe(20);
    expect(estimateContextTokens([u(3), withUsage(50, "error")])).toEqual({
      tokens: 4,
      usageTokens: 0,
      trailingTokens: 4,
      lastUsageIndex: null,
    });
  });
});

describe("shouldCompact", () => {
  it("is true only above window − reserve", () => {
    expect(shouldCompact(200_000 - 16_384, 200_000, 16_384)).toBe(false);
    expect(shouldCompact(200_000 - 16_383, 200_000, 16_384)).toBe(true);
  });
});

describe("findCutPoint", () => {
  it("keeps everything (cut at the first cut point) when the budget is never reached", () => {
    const path = pathOf([u(10), a(10), u(10), a(10)]);
    expect(findCutPoint(path, 0, path.length, 1000)).toEqual({
      firstKeptEntryIndex: 0,
      turnStartIndex: -1,
      isSplitTurn: false,
    });
  });

  it("cuts at the first cut point at or after the entry where the budget is reached", () => {
    const path = pathOf([u(400), a(400), u(400), a(400)]);
    expect(findCutPoint(path, 0, path.length, 800)).toEqual({
      firstKeptEntryIndex: 2,
      turnStartIndex: -1,
      isSplitTurn: false,
    });
  });

  it("never cuts at a tool result: moves forward to the next assistant, which splits the turn", () => {
    const path = pathOf([u(400), a(400, [toolCall("t1", "read", {})]), r("t1", 400), a(400)]);
    expect(findCutPoint(path, 0, path.length, 800)).toEqual({
      firstKeptEntryIndex: 3,
      turnStartIndex: 0,
      isSplitTurn: true,
    });
  });

  it("moves the cut back over non-message entries", () => {
    const path = pathOf([u(10), a(10), model, setting, u(500)]);
    expect(findCutPoint(path, 0, path.length, 100).firstKeptEntryIndex).toBe(2);
  });

  it("stops moving back at a compaction entry", () => {
    const compaction = { entry: { type: "compaction", summary: "s", firstKeptEntryId: "e0", tokensBefore: 1 } };
    const path = pathOf([u(10), compaction as EntryInput, setting, u(500)]);
    expect(findCutPoint(path, 0, path.length, 100).firstKeptEntryIndex).toBe(2);
  });

  it("returns startIndex when the range has no cut point", () => {
    const path = pathOf([u(10), setting, model]);
    expect(findCutPoint(path, 1, 3, 5)).toEqual({ firstKeptEntryIndex: 1, turnStartIndex: -1, isSplitTurn: false });
  });

  it("counts custom_message and branch_summary entries as cut points and turn starts", () => {
    const cm = { entry: { type: "custom_message", customType: "n", content: tokens(10), display: true } };
    const path = pathOf([u(10), a(10), cm as EntryInput, a(500)]);
    // The cut lands on the assistant (index 3), then moves back over the custom_message entry,
    // which is not a `message` entry (pi's rule); it is a turn start, so the turn is "split" at it.
    expect(findCutPoint(path, 0, path.length, 100)).toEqual({
      firstKeptEntryIndex: 2,
      turnStartIndex: 2,
      isSplitTurn: true,
    });
    expect(findTurnStartIndex(path, 3, 0)).toBe(2);
    expect(findTurnStartIndex(path, 1, 1)).toBe(-1);
  });

  it("fixes pi's defect: budget crossed in trailing tool results cuts at the assistant that issued them", () => {
    const calls = [toolCall("t1", "read", {}), toolCall("t2", "read", {})];
    const path = pathOf([u(50), a(50), u(50), a(50, calls), r("t1", 20_000), r("t2", 10)]);
    // pi would keep everything (cut at index 0); Fleet keeps the last assistant and its results.
    expect(findCutPoint(path, 0, path.length, 20_000)).toEqual({
      firstKeptEntryIndex: 3,
      turnStartIndex: 2,
      isSplitTurn: true,
    });
  });

  it("respects startIndex (the previous compaction's kept boundary)", () => {
    const path = pathOf([u(400), a(400), u(400), a(400), u(400), a(400)]);
    expect(findCutPoint(path, 2, path.length, 10_000).firstKeptEntryIndex).toBe(2);
    expect(findCutPoint(path, 2, path.length, 800).firstKeptEntryIndex).toBe(4);
  });
});

describe("prepareCompaction", () => {
  it("refuses when the path ends with a compaction, or is empty or too small", () => {
    const compaction = { entry: { type: "compaction", summary: "s", firstKeptEntryId: "e0", tokensBefore: 1 } };
    expect(prepareCompaction(pathOf([u(10), compaction as EntryInput]))).toEqual({
      ok: false,
      code: "already_compacted",
      error: "Already compacted",
    });
    const nothing = { ok: false, code: "nothing_to_compact", error: "Nothing to compact (session too small)" };
    expect(prepareCompaction([])).toEqual(nothing);
    expect(prepareCompaction(pathOf([u(10), a(10)]))).toEqual(nothing);
  });

  it("summarises the history before the cut and lists read and modified files", () => {
    const a1 = a(100, [
      toolCall("t1", "read", { path: "src/a.ts" }),
      toolCall("t2", "edit", { path: "src/b.ts", edits: [] }),
      toolCall("t3", "read", { path: "src/b.ts" }),
      toolCall("t4", "bash", { command: "ls" }),
    ]);
    const items = [
      u(100),
      a1,
      r("t1", 100),
      r("t2", 10),
      r("t3", 10),
      r("t4", 10),
      u(500),
      withTotal(a(500), 3000),
      u(7),
    ];
    const path = pathOf(items);
    const plan = prepareCompaction(path, 900);
    expect(plan).toEqual({
      ok: true,
      firstKeptEntryId: "e6",
      messages: items.slice(0, 6),
      turnPrefixMessages: [],
      isSplitTurn: false,
      tokensBefore: 3000 + 7, // last assistant usage + estimate of what follows it
      previousSummary: undefined,
      readFiles: ["src/a.ts"],
      modifiedFiles: ["src/b.ts"],
    });
  });

  it("for a split turn, summarises history up to the turn start and the turn prefix separately", () => {
    const items = [u(300), a(300), u(100), a(100, [toolCall("t1", "write", { path: "out.txt" })]), r("t1", 50), a(900)];
    const plan = prepareCompaction(pathOf(items), 900);
    expect(plan).toMatchObject({
      ok: true,
      firstKeptEntryId: "e5",
      messages: items.slice(0, 2),
      turnPrefixMessages: items.slice(2, 5),
      isSplitTurn: true,
      readFiles: [],
      modifiedFiles: ["out.txt"],
    });
  });

  it("starts at the previous compaction's kept entry, carries its files and summary", () => {
    const previous = {
      entry: {
        type: "compaction",
        summary: "old summary",
        firstKeptEntryId: "e2",
        tokensBefore: 5000,
        details: { readFiles: ["old-read.md", "both.md"], modifiedFiles: ["old-mod.ts"] },
      },
    } as EntryInput;
    const items: EntryInput[] = [
      u(300),
      a(300),
      u(300),
      withTotal(
        a(300, [toolCall("t1", "read", { path: "new.md" }), toolCall("t2", "edit", { path: "both.md" })]),
        5000,
      ),
      previous,
      u(600),
      { ...a(600), stopReason: "aborted", errorMessage: "Request was aborted" },
    ];
    const path = pathOf(items);
    const plan = prepareCompaction(path, 1000);
    expect(plan).toMatchObject({
      ok: true,
      firstKeptEntryId: "e5",
      messages: [items[2], items[3]],
      previousSummary: "old summary",
      readFiles: ["new.md", "old-read.md"],
      modifiedFiles: ["both.md", "old-mod.ts"],
    });
    // tokensBefore comes from the built context [summary, e2, e3, e5, e6]: e3's usage (the aborted
    // e6 has none) plus the estimates of e5 and e6.
    expect(plan.ok && plan.tokensBefore).toBe(5000 + 600 + 600);
  });

  it("includes custom and branch summary entries as messages, never compaction entries", () => {
    const bs = { entry: { type: "branch_summary", fromId: "root", summary: tokens(100) } } as EntryInput;
    const plan = prepareCompaction(pathOf([bs, u(100), a(100), u(800), a(800)]), 1000);
    expect(plan.ok && plan.messages.map((m) => m.role)).toEqual(["branchSummary", "user", "assistant"]);
  });
});

describe("file lists", () => {
  it("read-only files exclude modified ones; both sorted; formatted as pi's tags", () => {
    const lists = computeFileLists(["b", "a", "c"], ["c", "d"]);
    expect(lists).toEqual({ readFiles: ["a", "b"], modifiedFiles: ["c", "d"] });
    expect(formatFileLists(lists.readFiles, lists.modifiedFiles)).toBe(
      "\n\n<read-files>\na\nb\n</read-files>\n\n<modified-files>\nc\nd\n</modified-files>",
    );
    expect(formatFileLists([], ["x"])).toBe("\n\n<modified-files>\nx\n</modified-files>");
    expect(formatFileLists([], [])).toBe("");
  });
});

describe("convertToLlm", () => {
  it("passes LLM roles through and turns custom and summaries into user messages", () => {
    const user = userMessage("hi", 1);
    expect(
      convertToLlm([
        user,
        { role: "custom", customType: "c", content: "note", display: true, timestamp: 2 },
        { role: "branchSummary", summary: "B", fromId: "root", timestamp: 3 },
        { role: "compactionSummary", summary: "C", tokensBefore: 1, timestamp: 4 },
      ]),
    ).toEqual([
      user,
      { role: "user", content: [textOf("note")], timestamp: 2 },
      {
        role: "user",
        content: [
          textOf(
            "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nB</summary>",
          ),
        ],
        timestamp: 3,
      },
      {
        role: "user",
        content: [
          textOf(
            "The conversation history before this point was compacted into the following summary:\n\n<summary>\nC\n</summary>",
          ),
        ],
        timestamp: 4,
      },
    ]);
  });
});

describe("serializeConversation", () => {
  it("writes pi's flat transcript", () => {
    const text = serializeConversation([
      userMessage("Fix the bug"),
      assistantMessage([
        { type: "thinking", thinking: "look first" },
        textOf("Reading."),
        toolCall("t1", "read", { path: "a.ts", limit: 10 }),
        toolCall("t2", "bash", { command: "ls" }),
      ]),
      toolResultMessage("t1", "read", "const a = 1;"),
      toolResultMessage("t2", "bash", ""),
      { role: "user", content: [], timestamp: 0 },
      { role: "custom", customType: "c", content: "extension note", display: false, timestamp: 0 },
    ]);
    expect(text).toBe(
      [
        "[User]: Fix the bug",
        "[Assistant thinking]: look first",
        "[Assistant]: Reading.",
        '[Assistant tool calls]: read(path="a.ts", limit=10); bash(command="ls")',
        "[Tool result]: const a = 1;",
        "[User]: extension note",
      ].join("\n\n"),
    );
  });

  it("cuts tool results at 2000 characters and never cuts user or assistant text", () => {
    const long = "y".repeat(2500);
    const text = serializeConversation([userMessage(long), toolResultMessage("t", "read", long)]);
    expect(text).toBe(`[User]: ${long}\n\n[Tool result]: ${"y".repeat(2000)}\n\n[... 500 more characters truncated]`);
    expect(serializeConversation([toolResultMessage("t", "read", "z".repeat(2000))])).toBe(
      `[Tool result]: ${"z".repeat(2000)}`,
    );
  });

  it("joins multiple text and thinking blocks with newlines", () => {
    expect(
      serializeConversation([
        assistantMessage([
          textOf("a"),
          { type: "thinking", thinking: "t1" },
          textOf("b"),
          { type: "thinking", thinking: "t2" },
        ]),
      ]),
    ).toBe("[Assistant thinking]: t1\nt2\n\n[Assistant]: a\nb");
  });
});
