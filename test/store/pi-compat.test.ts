import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type FleetEvent,
  foldSessionTreeEvents,
  getBranch,
  importPiJsonl,
  piJsonlToImportCommand,
  StoreReply,
} from "@fleet/protocol";
import type { StoreService } from "@fleet/session-store";
import { syntheticEvents } from "@fleet/session-store/testing";
import { buildSessionContext, SessionManager } from "@mariozechner/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Fixture, Publisher, query, startFixture, startStore, waitProjected } from "./support.js";

let f: Fixture;
let store: StoreService;
let dir: string;
const logs = new Map<string, FleetEvent[]>();
const json = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

beforeAll(async () => {
  f = await startFixture();
  dir = mkdtempSync(join(tmpdir(), "fleet-pi-compat-"));
  for (let i = 0; i < 8; i++) {
    const sid = `pi-${i}`;
    logs.set(
      sid,
      syntheticEvents({
        sessionId: sid,
        seed: 500 + i,
        runs: 24,
        branchRate: 0.3,
        compactionRate: 0.25,
        labelRate: 0.4,
        settingsRate: 0.3,
      }),
    );
  }
  // One session whose leaf was moved back to an older entry and nothing was appended since.
  const moved = [...(logs.get("pi-0") as FleetEvent[])];
  const tree = foldSessionTreeEvents(moved);
  const target = tree.entries.find(
    (e) => e.type === "message" && e.message.role === "assistant" && e !== tree.entries.at(-1),
  );
  if (!target) throw new Error("no assistant entry");
  const last = moved.at(-1) as FleetEvent;
  moved.push({
    type: "leaf",
    targetId: target.id,
    meta: { v: 1, id: "pi-0-moved", sessionId: "pi-0", ts: last.meta.ts + 1, producer: "test" },
  });
  logs.set("pi-0", moved);
  const publisher = new Publisher(f.js, f.partitions);
  await publisher.publishInterleaved([...logs.values()]);
  store = await startStore(f);
  await waitProjected(f, publisher);
});

afterAll(async () => {
  await store?.stop();
  await f?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("pi compatibility", () => {
  it("the test sessions have branches, compactions on the context path, labels and a moved leaf", () => {
    let compactedPaths = 0;
    let labelled = 0;
    let branched = 0;
    for (const events of logs.values()) {
      const tree = foldSessionTreeEvents(events);
      const path = (getBranch(tree) as { entries: { type: string }[] }).entries;
      if (path.some((e) => e.type === "compaction")) compactedPaths++;
      if (Object.keys(tree.labels).length > 0) labelled++;
      if (events.some((e) => e.type === "leaf")) branched++;
    }
    expect(compactedPaths).toBeGreaterThanOrEqual(3);
    expect(labelled).toBeGreaterThanOrEqual(6);
    expect(branched).toBeGreaterThanOrEqual(6);
    const t0 = foldSessionTreeEvents(logs.get("pi-0") as FleetEvent[]);
    expect(t0.leafId).not.toBe(t0.entries.at(-1)?.id);
  });

  it("pi's SessionManager loads Fleet's export and builds the same context as get_context", async () => {
    for (const sid of logs.keys()) {
      const exported = await query(f.nc, "export", { sessionId: sid });
      expect(StoreReply.export.safeParse(exported).success).toBe(true);
      const file = join(dir, `${sid}.jsonl`);
      writeFileSync(file, exported.jsonl as string);
      const sm = SessionManager.open(file, dir);
      const ctx = await query(f.nc, "get_context", { sessionId: sid });
      const tree = await query(f.nc, "get_tree", { sessionId: sid });
      const pi = sm.buildSessionContext();
      expect(sm.getLeafId()).toBe(ctx.leafId);
      expect(json(pi.messages)).toEqual(ctx.messages);
      expect(pi.thinkingLevel).toBe(ctx.thinkingLevel);
      if (pi.model) expect(pi.model).toEqual(ctx.model);
      expect(sm.getSessionId()).toBe(sid);
      // Labels and the name resolve the same way.
      const labels = tree.labels as Record<string, string>;
      for (const entry of tree.entries as Array<{ id: string }>) expect(sm.getLabel(entry.id)).toBe(labels[entry.id]);
      const name = foldSessionTreeEvents(logs.get(sid) as FleetEvent[]).name;
      expect(sm.getSessionName()?.trim() || null).toBe(name);
      // Every branch, not only the leaf's.
      for (const entry of (tree.entries as Array<{ id: string }>).filter((_, i) => i % 7 === 0)) {
        const at = await query(f.nc, "get_context", { sessionId: sid, leafId: entry.id });
        const piAt = buildSessionContext(sm.getEntries(), entry.id);
        expect(json(piAt.messages)).toEqual(at.messages);
      }
    }
  });

  it("import parses the export back into the same tree and a valid import_session command", async () => {
    for (const sid of logs.keys()) {
      const exported = (await query(f.nc, "export", { sessionId: sid })).jsonl as string;
      const tree = await query(f.nc, "get_tree", { sessionId: sid });
      const parsed = importPiJsonl(exported);
      expect(parsed.ok).toBe(true);
      if (!parsed.ok) return;
      expect(parsed.leafId).toBe(tree.leafId);
      const shape = (entries: Array<{ id: string; parentId: string | null }>) =>
        new Map(entries.map((e) => [e.id, e.parentId]));
      expect(shape(parsed.entries)).toEqual(shape(tree.entries as Array<{ id: string; parentId: string | null }>));
      const byId = new Map((tree.entries as Array<{ id: string }>).map((e) => [e.id, e]));
      for (const e of parsed.entries) expect(json(e)).toEqual(byId.get(e.id));
      const cmd = piJsonlToImportCommand(exported, { id: `import-${sid}`, sessionId: `${sid}-copy` });
      expect(cmd.ok).toBe(true);
    }
  });
});
