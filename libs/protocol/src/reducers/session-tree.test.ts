import { describe, expect, it } from "vitest";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  type LogBuilder,
  T0,
  textOf,
  toolResultMessage,
  userMessage,
} from "../../fixtures/builders.js";
import type { FleetEvent } from "../events.js";
import type { CustomMessage } from "../messages.js";
import {
  buildContext,
  emptySessionTree,
  entryFromEvent,
  foldSessionTree,
  foldSessionTreeEvents,
  foldSessionTreeInPlace,
  getBranch,
  getEntry,
  getTree,
  type SessionTree,
} from "./session-tree.js";

const fold = (events: FleetEvent[]) => events.reduce(foldSessionTree, emptySessionTree());
const ids = (tree: SessionTree) => tree.entries.map((e) => e.id);

/** Appends a user + assistant exchange (message_end only); returns the two entry ids. */
function exchange(log: LogBuilder, q: string, a: string, model = "claude-sonnet-4-5"): [string, string] {
  const u = log.add({ type: "message_end", message: userMessage(q) }).meta.id;
  const reply = { ...assistantMessage([textOf(a)]), model };
  const r = log.add({ type: "message_end", message: reply }).meta.id;
  return [u, r];
}

describe("session tree / entries", () => {
  it("maps each entry event to its entry with timestamp = meta.ts and parent = the leaf", () => {
    const log = createLogBuilder(1);
    log.add({ type: "session_created", config: CONFIG });
    const custom: CustomMessage = {
      role: "custom",
      customType: "note",
      content: "remember",
      display: true,
      details: { k: 1 },
      timestamp: 5,
    };
    log.add({ type: "message_end", message: userMessage("q") });
    log.add({ type: "message_end", message: custom });
    log.add({ type: "model_change", provider: "openai", modelId: "gpt-5" });
    log.add({ type: "thinking_level_change", thinkingLevel: "low" });
    log.add({ type: "active_tools_change", toolNames: ["read"] });
    log.add({
      type: "compaction",
      summary: "sum",
      firstKeptEntryId: log.events[1]?.meta.id as string,
      tokensBefore: 9,
    });
    log.add({ type: "branch_summary", fromId: "root", summary: "bs" });
    log.add({ type: "label", targetId: "x", label: "l" });
    log.add({ type: "session_info", name: "n" });
    log.add({ type: "custom", customType: "state", data: { a: [1] } });
    const tree = fold(log.events);
    const id = (n: number) => log.events[n]?.meta.id as string;
    const base = (n: number) => ({ id: id(n), parentId: n === 1 ? null : id(n - 1), timestamp: T0 + 10 * (n + 1) });
    expect(tree.entries).toEqual([
      { type: "message", ...base(1), message: userMessage("q") },
      { type: "custom_message", ...base(2), customType: "note", content: "remember", display: true, details: { k: 1 } },
      { type: "model_change", ...base(3), provider: "openai", modelId: "gpt-5" },
      { type: "thinking_level_change", ...base(4), thinkingLevel: "low" },
      { type: "active_tools_change", ...base(5), toolNames: ["read"] },
      { type: "compaction", ...base(6), summary: "sum", firstKeptEntryId: id(1), tokensBefore: 9 },
      { type: "branch_summary", ...base(7), fromId: "root", summary: "bs" },
      { type: "label", ...base(8), targetId: "x", label: "l" },
      { type: "session_info", ...base(9), name: "n" },
      { type: "custom", ...base(10), customType: "state", data: { a: [1] } },
    ]);
    expect(tree.leafId).toBe(id(10));
    expect(tree.config).toEqual(CONFIG);
    expect(tree.sessionId).toBe("s-1");
  });

  it("creates no entry for message_start, agent events or session events without entry", () => {
    const log = createLogBuilder(2);
    const events = [
      log.add({ type: "agent_start" }),
      log.add({ type: "message_start", message: userMessage("q") }),
      log.add({ type: "turn_end", message: assistantMessage([]), toolResults: [] }),
      log.add({ type: "command_accepted", commandId: "c", commandType: "prompt" }),
      log.add({ type: "queue_update", steer: [], followUp: [], nextTurn: [] }),
      log.add({ type: "owner_change", workerId: "w", partition: 1, epoch: 2 }),
    ];
    const tree = emptySessionTree();
    for (const event of events) {
      expect(entryFromEvent(event)).toBeUndefined();
      expect(foldSessionTree(tree, event)).toBe(tree);
    }
  });

  it("uses the first session_created only", () => {
    const log = createLogBuilder(3);
    log.add({ type: "session_created", config: CONFIG });
    log.add({ type: "session_created", config: { ...CONFIG, systemPrompt: "other" } });
    expect(fold(log.events).config?.systemPrompt).toBe("You are a helpful assistant.");
  });
});

describe("session tree / leaf, labels, name", () => {
  it("leaf is the last created entry, or the target of a leaf event (null = before the first entry)", () => {
    const log = createLogBuilder(4);
    const [u1, a1] = exchange(log, "q1", "a1");
    exchange(log, "q2", "a2");
    log.add({ type: "leaf", targetId: u1 });
    expect(fold(log.events).leafId).toBe(u1);
    const [u3] = exchange(log, "q3", "a3");
    const tree = fold(log.events);
    expect(getEntry(tree, u3)).toMatchObject({ ok: true, entry: { parentId: u1 } });
    log.add({ type: "leaf", targetId: null });
    expect(fold(log.events).leafId).toBeNull();
    const [u4] = exchange(log, "q4", "a4");
    expect(getEntry(fold(log.events), u4)).toMatchObject({ ok: true, entry: { parentId: null } });
    expect(a1).toBeTruthy();
  });

  it("labels: last one wins, null or empty clears; label entries are on the path", () => {
    const log = createLogBuilder(5);
    const [u1, a1] = exchange(log, "q1", "a1");
    log.add({ type: "label", targetId: u1, label: "first" });
    log.add({ type: "label", targetId: a1, label: "answer" });
    log.add({ type: "label", targetId: u1, label: "second" });
    expect(fold(log.events).labels).toEqual({ [u1]: "second", [a1]: "answer" });
    log.add({ type: "label", targetId: u1, label: null });
    log.add({ type: "label", targetId: a1, label: "" });
    const tree = fold(log.events);
    expect(tree.labels).toEqual({});
    expect(tree.entries).toHaveLength(7);
    expect(tree.leafId).toBe(log.events.at(-1)?.meta.id);
  });

  it("session name comes from the latest session_info, trimmed; empty clears", () => {
    const log = createLogBuilder(6);
    log.add({ type: "session_info", name: "  Refactor  " });
    expect(fold(log.events).name).toBe("Refactor");
    log.add({ type: "session_info", name: "   " });
    expect(fold(log.events).name).toBeNull();
  });
});

describe("session tree / idempotency and persistence", () => {
  function richLog(): FleetEvent[] {
    const log = createLogBuilder(7);
    log.add({ type: "session_created", config: CONFIG });
    const [u1] = exchange(log, "q1", "a1");
    log.add({ type: "label", targetId: u1, label: "start" });
    exchange(log, "q2", "a2");
    log.add({ type: "leaf", targetId: u1 });
    log.add({ type: "branch_summary", fromId: u1, summary: "left q2" });
    exchange(log, "q3", "a3");
    log.add({ type: "session_info", name: "demo" });
    return log.events;
  }

  it("a duplicate event applied right after the original changes nothing (same object)", () => {
    let tree = emptySessionTree();
    for (const event of richLog()) {
      tree = foldSessionTree(tree, event);
      expect(foldSessionTree(tree, event)).toBe(tree);
    }
  });

  it("a redelivered event applied later changes nothing, including an old leaf move", () => {
    const events = richLog();
    const tree = fold(events);
    for (const event of events) expect(foldSessionTree(tree, event)).toBe(tree);
  });

  it("never modifies the tree it is given", () => {
    const events = richLog();
    let tree = emptySessionTree();
    for (const event of events) {
      const before = JSON.stringify(tree);
      foldSessionTree(tree, event);
      expect(JSON.stringify(tree)).toBe(before);
      tree = foldSessionTree(tree, event);
    }
  });

  it("batch fold, step fold, and fold resumed from JSON give the same bytes", () => {
    const events = richLog();
    const stepwise = JSON.stringify(fold(events));
    expect(JSON.stringify(foldSessionTreeEvents(events))).toBe(stepwise);
    const half = JSON.parse(JSON.stringify(fold(events.slice(0, 6)))) as SessionTree;
    expect(JSON.stringify(foldSessionTreeEvents(events.slice(6), half))).toBe(stepwise);
    expect(JSON.parse(stepwise)).toEqual(fold(events));
  });

  it("the in-place fold gives the step fold's tree, and a redelivered event changes nothing", () => {
    const events = richLog();
    const tree = emptySessionTree();
    const changed = events.map((e) => foldSessionTreeInPlace(tree, e));
    expect(JSON.stringify(tree)).toBe(JSON.stringify(fold(events)));
    expect(changed.every(Boolean)).toBe(true);
    expect(events.map((e) => foldSessionTreeInPlace(tree, e)).some(Boolean)).toBe(false);
    expect(JSON.stringify(tree)).toBe(JSON.stringify(fold(events)));
  });

  it("the in-place fold of an older version keeps the newer version's lookups right", () => {
    const log = createLogBuilder(23);
    const x = log.add({ type: "message_end", message: userMessage("x") });
    const y = log.add({ type: "message_end", message: userMessage("y") });
    const z = log.add({ type: "message_end", message: userMessage("z") }, { parentId: x.meta.id });
    const base = foldSessionTree(emptySessionTree(), x);
    const withY = foldSessionTree(base, y);
    expect(foldSessionTreeInPlace(base, z)).toBe(true);
    expect(ids(base)).toEqual([x.meta.id, z.meta.id]);
    expect(getEntry(base, z.meta.id)).toMatchObject({ ok: true, entry: { id: z.meta.id } });
    expect(getEntry(base, y.meta.id).ok).toBe(false);
    expect(getEntry(withY, z.meta.id).ok).toBe(false);
    expect(getEntry(withY, y.meta.id)).toMatchObject({ ok: true, entry: { id: y.meta.id } });
  });

  it("folding an older version again keeps every version's lookups right", () => {
    const log = createLogBuilder(19);
    const x = log.add({ type: "message_end", message: userMessage("x") });
    const y = log.add({ type: "message_end", message: userMessage("y") });
    const z = log.add({ type: "message_end", message: userMessage("z") }, { parentId: x.meta.id });
    const base = foldSessionTree(emptySessionTree(), x);
    const withY = foldSessionTree(base, y);
    const withZ = foldSessionTree(base, z);
    const withYZ = foldSessionTree(withY, z);
    expect(ids(withY)).toEqual([x.meta.id, y.meta.id]);
    expect(ids(withZ)).toEqual([x.meta.id, z.meta.id]);
    expect(getEntry(withZ, y.meta.id).ok).toBe(false);
    expect(getEntry(withY, z.meta.id).ok).toBe(false);
    expect(getEntry(base, y.meta.id).ok).toBe(false);
    expect(getEntry(withYZ, z.meta.id)).toMatchObject({ ok: true, entry: { id: z.meta.id } });
    expect(foldSessionTree(withZ, y)).not.toBe(withZ);
    expect(foldSessionTree(withZ, z)).toBe(withZ);
    expect(getBranch(withYZ)).toMatchObject({ ok: true, entries: [{ id: x.meta.id }, { id: z.meta.id }] });
  });

  it("treats hostile ids as data (no prototype pollution)", () => {
    const log = createLogBuilder(8);
    log.add({ type: "message_end", message: userMessage("q") }, {});
    const evil = { ...(log.events[0] as FleetEvent) } as FleetEvent & { entry: { id: string; parentId: null } };
    evil.meta = { ...evil.meta, id: "__proto__" };
    evil.entry = { id: "__proto__", parentId: null };
    const tree = foldSessionTree(emptySessionTree(), evil);
    const labelled = foldSessionTree(tree, {
      type: "label",
      targetId: "__proto__",
      label: "x",
      entry: { id: "l1", parentId: "__proto__" },
      meta: { ...evil.meta, id: "l1" },
    });
    expect(getEntry(labelled, "__proto__")).toMatchObject({ ok: true, entry: { id: "__proto__" } });
    expect(getBranch(labelled).ok && getBranch(labelled)).toMatchObject({
      entries: [{ id: "__proto__" }, { id: "l1" }],
    });
    expect(Object.hasOwn(labelled.labels, "__proto__")).toBe(true);
    expect(getEntry(labelled, "toString")).toEqual({ ok: false, code: "not_found", error: "Entry toString not found" });
    const revived = JSON.parse(JSON.stringify(labelled)) as SessionTree;
    expect(revived).toEqual(labelled);
    expect(getEntry(revived, "__proto__")).toMatchObject({ ok: true, entry: { id: "__proto__" } });
  });
});

describe("session tree / queries", () => {
  const log = createLogBuilder(9);
  log.add({ type: "session_created", config: CONFIG });
  const [u1, a1] = exchange(log, "q1", "a1");
  const [u2, a2] = exchange(log, "q2", "a2");
  log.add({ type: "leaf", targetId: a1 });
  const [u3, a3] = exchange(log, "q3", "a3");
  const tree = fold(log.events);

  it("getBranch returns root→leaf for the tree's leaf or a given entry", () => {
    expect(getBranch(tree)).toMatchObject({ ok: true, entries: [{ id: u1 }, { id: a1 }, { id: u3 }, { id: a3 }] });
    expect(getBranch(tree, a2)).toMatchObject({ ok: true, entries: [{ id: u1 }, { id: a1 }, { id: u2 }, { id: a2 }] });
    expect(getBranch(tree, u1)).toMatchObject({ ok: true, entries: [{ id: u1 }] });
    expect(getBranch(tree, null)).toEqual({ ok: true, entries: [] });
    expect(getBranch(emptySessionTree())).toEqual({ ok: true, entries: [] });
  });

  it("an unknown leaf id is a not_found error, not a fallback", () => {
    expect(getBranch(tree, "nope")).toEqual({ ok: false, code: "not_found", error: "Entry nope not found" });
    expect(buildContext(tree, "nope")).toEqual({ ok: false, code: "not_found", error: "Entry nope not found" });
    expect(getEntry(tree, "nope")).toEqual({ ok: false, code: "not_found", error: "Entry nope not found" });
  });

  it("getTree gives entries in creation order, roots and children", () => {
    const view = getTree(tree);
    expect(view.entries.map((e) => e.id)).toEqual([u1, a1, u2, a2, u3, a3]);
    expect(view.roots).toEqual([u1]);
    expect(view.children).toEqual({ [u1]: [a1], [a1]: [u2, u3], [u2]: [a2], [u3]: [a3] });
    expect(view.leafId).toBe(a3);
  });

  it("getTree treats entries with a missing parent as roots (orphans)", () => {
    const orphanLog = createLogBuilder(10);
    orphanLog.add({ type: "message_end", message: userMessage("q") }, { parentId: "missing" });
    const view = getTree(fold(orphanLog.events));
    expect(view.roots).toEqual([orphanLog.events[0]?.meta.id]);
    expect(getBranch(fold(orphanLog.events))).toMatchObject({ ok: true, entries: [{ parentId: "missing" }] });
  });

  it("a leaf event to an unknown id is recorded and reported at lookup", () => {
    const moved = foldSessionTree(tree, {
      ...(log.events.at(-1) as FleetEvent),
      type: "leaf",
      targetId: "ghost",
    } as FleetEvent);
    expect(moved.leafId).toBe("ghost");
    expect(buildContext(moved)).toEqual({ ok: false, code: "not_found", error: "Entry ghost not found" });
    expect(ids(moved)).toEqual(ids(tree));
  });
});

describe("session tree / buildContext", () => {
  it("an empty session has no messages and the config's settings", () => {
    const log = createLogBuilder(11);
    log.add({ type: "session_created", config: { ...CONFIG, thinkingLevel: "low", activeTools: ["read"] } });
    expect(buildContext(fold(log.events))).toEqual({
      ok: true,
      messages: [],
      model: CONFIG.model,
      thinkingLevel: "low",
      activeToolNames: ["read"],
      leafId: null,
    });
  });

  it("without config: no model, thinking off, every tool", () => {
    expect(buildContext(emptySessionTree())).toEqual({
      ok: true,
      messages: [],
      model: null,
      thinkingLevel: "off",
      activeToolNames: null,
      leafId: null,
    });
  });

  it("follows the path only: other branches' messages and settings do not count", () => {
    const log = createLogBuilder(12);
    log.add({ type: "session_created", config: CONFIG });
    const [, a1] = exchange(log, "q1", "a1");
    log.add({ type: "model_change", provider: "openai", modelId: "gpt-5" });
    log.add({ type: "thinking_level_change", thinkingLevel: "high" });
    log.add({ type: "active_tools_change", toolNames: ["bash"] });
    const [, a2] = exchange(log, "q2", "a2", "gpt-5");
    log.add({ type: "leaf", targetId: a1 });
    exchange(log, "q3", "a3");
    const tree = fold(log.events);
    const main = buildContext(tree);
    expect(main.ok && main.messages.map((m) => (m.role === "user" ? "u" : "a"))).toEqual(["u", "a", "u", "a"]);
    expect(main).toMatchObject({ model: CONFIG.model, thinkingLevel: "off", activeToolNames: null });
    expect(buildContext(tree, a2)).toMatchObject({
      ok: true,
      model: { provider: "anthropic", modelId: "gpt-5" }, // the last assistant message wins over model_change
      thinkingLevel: "high",
      activeToolNames: ["bash"],
      leafId: a2,
    });
  });

  it("model_change after the last assistant message sets the model", () => {
    const log = createLogBuilder(13);
    exchange(log, "q1", "a1");
    log.add({ type: "model_change", provider: "openai", modelId: "gpt-5" });
    expect(buildContext(fold(log.events))).toMatchObject({ model: { provider: "openai", modelId: "gpt-5" } });
  });

  it("custom_message entries become custom messages; branch summaries become branchSummary messages (empty skipped)", () => {
    const log = createLogBuilder(14);
    const [u1] = exchange(log, "q1", "a1");
    log.add({
      type: "message_end",
      message: { role: "custom", customType: "note", content: [textOf("n")], display: false, timestamp: 1 },
    });
    const bs = log.add({ type: "branch_summary", fromId: u1, summary: "explored" });
    log.add({ type: "branch_summary", fromId: u1, summary: "" });
    log.add({ type: "custom", customType: "state", data: 1 });
    log.add({ type: "label", targetId: u1, label: "x" });
    const ctx = buildContext(fold(log.events));
    expect(ctx.ok && ctx.messages.slice(2)).toEqual([
      { role: "custom", customType: "note", content: [textOf("n")], display: false, timestamp: log.events[2]?.meta.ts },
      { role: "branchSummary", summary: "explored", fromId: u1, timestamp: bs.meta.ts },
    ]);
  });

  it("compaction: summary first, kept entries from firstKeptEntryId, then everything after", () => {
    const log = createLogBuilder(15);
    exchange(log, "q1", "a1");
    const [u2, a2] = exchange(log, "q2", "a2");
    const result = log.add({ type: "message_end", message: toolResultMessage("toolu_1", "read", "r") });
    const compaction = log.add({ type: "compaction", summary: "S", firstKeptEntryId: u2, tokensBefore: 500 });
    const [u3, a3] = exchange(log, "q3", "a3");
    const tree = fold(log.events);
    const ctx = buildContext(tree);
    const entryMessage = (id: string) => {
      const found = getEntry(tree, id);
      return found.ok && found.entry.type === "message" ? found.entry.message : undefined;
    };
    expect(ctx.ok && ctx.messages).toEqual([
      { role: "compactionSummary", summary: "S", tokensBefore: 500, timestamp: compaction.meta.ts },
      entryMessage(u2),
      entryMessage(a2),
      entryMessage(result.meta.id),
      entryMessage(u3),
      entryMessage(a3),
    ]);
  });

  it("only the latest compaction on the path counts", () => {
    const log = createLogBuilder(16);
    const [u1] = exchange(log, "q1", "a1");
    log.add({ type: "compaction", summary: "S1", firstKeptEntryId: u1, tokensBefore: 1 });
    const [u2, a2] = exchange(log, "q2", "a2");
    log.add({ type: "compaction", summary: "S2", firstKeptEntryId: a2, tokensBefore: 2 });
    const ctx = buildContext(fold(log.events));
    expect(ctx.ok && ctx.messages.map((m) => (m.role === "compactionSummary" ? m.summary : m.role))).toEqual([
      "S2",
      "assistant",
    ]);
    expect(u2).toBeTruthy();
  });

  it("a firstKeptEntryId that is not on the path keeps nothing before the compaction", () => {
    const log = createLogBuilder(17);
    exchange(log, "q1", "a1");
    log.add({ type: "compaction", summary: "S", firstKeptEntryId: "elsewhere", tokensBefore: 1 });
    const [, a2] = exchange(log, "q2", "a2");
    const ctx = buildContext(fold(log.events));
    expect(ctx.ok && ctx.messages.map((m) => m.role)).toEqual(["compactionSummary", "user", "assistant"]);
    expect(ctx.ok && ctx.leafId).toBe(a2);
  });

  it("leafId null gives no messages even when entries exist", () => {
    const log = createLogBuilder(18);
    log.add({ type: "session_created", config: CONFIG });
    exchange(log, "q1", "a1");
    expect(buildContext(fold(log.events), null)).toMatchObject({ ok: true, messages: [], leafId: null });
  });
});
