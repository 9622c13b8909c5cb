// Session lifecycle through the SDK against the real stack (NATS, Redis, store, tool runner with
// bubblewrap, loop worker on the fake Anthropic API): delete, archive, restore, the refusal during
// a run, and what each leaves behind, read from the servers.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { CommandRejectedError } from "@fleet/client";
import { archiveNames, type FleetEvent, importPiJsonl, OBJECT_STORES, parseArchive, utcDayOf } from "@fleet/protocol";
import { connectNats } from "@fleet/runtime";
import { fakeReply, fakeText, fakeToolUse } from "@fleet/testkit";
import { builtinTools, createToolRunner } from "@fleet/tools";
import { Objm } from "@nats-io/obj";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayStack, silent, startGatewayStack, waitIdle } from "../gateway/support.js";
import {
  blobNamesIn,
  countedSpend,
  eventually,
  ledgerOf,
  leftovers,
  NOTHING_LEFT,
  startEndlessRun,
  storedEvents,
} from "./support.js";

let stack: GatewayStack;

beforeAll(async () => {
  stack = await startGatewayStack();
}, 60_000);
afterAll(async () => {
  await stack?.stop();
});

const idle = (sessionId: string, messages: number) => waitIdle(stack.client, sessionId, messages);

/** A session that ran a bash call with a long output (a blob) writing a file (its workspace). */
async function sessionWithToolRun(sessionId: string): Promise<FleetEvent[]> {
  stack.fake.script(
    fakeReply([fakeToolUse("bash", { command: "seq 1 3000; echo kept > kept.txt" })]),
    fakeReply([fakeText("done")]),
  );
  await stack.client.prompt(sessionId, "make some output");
  await idle(sessionId, 4);
  return storedEvents(stack.client, sessionId);
}

describe("session lifecycle / SDK", () => {
  it("deletes a session's events, projection, blobs, tool results, workspace and spend records, keeping its spend in the ledger", async () => {
    const sid = "lc-delete-1";
    const events = await sessionWithToolRun(sid);
    const blobs = blobNamesIn(events);
    expect(blobs).toHaveLength(1);
    const day = utcDayOf(Date.now());
    const opts = { days: [day], blobs, workspace: stack.workspace };
    const before = await leftovers(stack.client, sid, opts);
    expect(before).toMatchObject({ blobs: 1, spendKeys: 1, projection: "present", workspace: true });
    expect(before.events).toBeGreaterThan(0);
    expect(before.toolResults).toBeGreaterThan(0);
    await countedSpend(stack.client, sid, events, day);
    const budgetBefore = await stack.client.tenantBudget(day);
    const spent = budgetBefore.sessions.get(sid);
    expect(spent?.totalTokens).toBeGreaterThan(0);

    const record = await stack.client.deleteSession(sid, { by: "test-suite" });
    expect(record).toMatchObject({ type: "session_deleted", sessionId: sid, by: "test-suite", events: events.length });
    expect(record.type === "session_deleted" && record.spend).toEqual([{ day, ...spent }]);
    // Gone when the call returns, but the workspace: the runner removes it when the record arrives.
    expect({ ...(await leftovers(stack.client, sid, opts)), workspace: false }).toEqual(NOTHING_LEFT);
    expect(await eventually(() => leftovers(stack.client, sid, opts), NOTHING_LEFT)).toEqual(NOTHING_LEFT);
    // The auditor's record stays; the session's spend still counts for the tenant's day.
    expect(await stack.client.lifecycleRecord(sid)).toEqual(record);
    const ledger = await ledgerOf(stack.client, day);
    expect(ledger?.pending).toEqual([]);
    const budgetAfter = await stack.client.tenantBudget(day);
    expect(budgetAfter.sessions.has(sid)).toBe(false);
    expect(budgetAfter.total.totalTokens).toBe(budgetBefore.total.totalTokens);
    expect(budgetAfter.deleted.totalTokens).toBeGreaterThanOrEqual(spent?.totalTokens ?? 0);
    const listed = await stack.client.listSessions({ limit: 1000 });
    expect(listed.sessions.map((s) => s.sessionId)).not.toContain(sid);
    // The id is free again: a new session of that id starts empty.
    stack.fake.script(fakeReply([fakeText("fresh")]));
    await stack.client.prompt(sid, "again");
    await idle(sid, 2);
    const fresh = await storedEvents(stack.client, sid);
    expect(fresh.filter((e) => e.type === "session_created")).toHaveLength(1);
    expect(fresh.some((e) => e.type === "session_deleting")).toBe(false);
  });

  it("refuses to delete a session while its run is open (busy), and deletes it once aborted", async () => {
    const sid = "lc-busy-1";
    await startEndlessRun(stack, sid);
    const refused = await stack.client.deleteSession(sid).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(CommandRejectedError);
    expect(refused).toMatchObject({
      code: "busy",
      reason: "Cannot delete a session while a run is active; abort it first",
    });
    const archiveRefused = await stack.client.archiveSession(sid).catch((err: unknown) => err);
    expect(archiveRefused).toMatchObject({ code: "busy" });
    await stack.client.abort(sid);
    await idle(sid, 2);
    const record = await stack.client.deleteSession(sid);
    expect(record.type).toBe("session_deleted");
    expect(await stack.client.lastSeq(sid)).toBe(0);
  });

  it("answers not_found for a session that does not exist, to delete, archive and restore", async () => {
    for (const op of ["deleteSession", "archiveSession", "restoreSession"] as const) {
      const err = await stack.client[op]("lc-never-was").catch((e: unknown) => e);
      expect(err).toMatchObject({ kind: "rejected", code: "not_found" });
    }
  });

  it("archives a session (events and pi JSONL), deletes it, and restores it with the same id and history", async () => {
    const sid = "lc-archive-1";
    const events = await sessionWithToolRun(sid);
    stack.fake.script(fakeReply([fakeText("second answer")]));
    await stack.client.prompt(sid, "and once more");
    await idle(sid, 6);
    const history = await storedEvents(stack.client, sid);
    expect(history.length).toBeGreaterThan(events.length);
    const tree = await stack.client.getTree(sid);
    const day = utcDayOf(Date.now());
    await countedSpend(stack.client, sid, history, day);
    const budgetBefore = await stack.client.tenantBudget(day);
    const ledgerBefore = await ledgerOf(stack.client, day);

    const archived = await stack.client.archiveSession(sid, { by: "archivist" });
    expect(archived).toMatchObject({ type: "session_archived", by: "archivist", events: history.length });
    const opts = { days: [day], blobs: blobNamesIn(history), workspace: stack.workspace };
    expect(await eventually(() => leftovers(stack.client, sid, opts), NOTHING_LEFT)).toEqual(NOTHING_LEFT);
    const store = await new Objm(stack.client.nc).open(OBJECT_STORES.archive.name);
    const names = archiveNames(sid);
    const archive = parseArchive(new TextDecoder().decode((await store.getBlob(names.events)) ?? new Uint8Array()));
    if (!archive.ok) throw new Error(archive.error);
    expect(archive.value.events).toEqual(history);
    const pi = importPiJsonl(new TextDecoder().decode((await store.getBlob(names.pi)) ?? new Uint8Array()));
    expect(pi.ok && pi.entries.length).toBe(tree.entries.length);
    const ledgerArchived = await ledgerOf(stack.client, day);
    expect(ledgerArchived?.totalTokens).toBe(
      (ledgerBefore?.totalTokens ?? 0) + (budgetBefore.sessions.get(sid)?.totalTokens ?? 0),
    );

    const restored = await stack.client.restoreSession(sid, { by: "restorer" });
    expect(restored).toMatchObject({ type: "session_restored", by: "restorer", events: history.length });
    const back = await storedEvents(stack.client, sid);
    expect(back.map((e) => e.type)).toEqual([
      "owner_change",
      "command_accepted",
      "session_restoring",
      ...history.map((e) => e.type),
      "session_restored",
    ]);
    expect(back.slice(3, -1)).toEqual(history);
    await expect.poll(async () => (await stack.client.getTree(sid)).entries).toEqual(tree.entries);
    // The archive goes once the log holds it all again; the spend is the session's own again.
    await expect.poll(() => store.info(names.events)).toBeNull();
    await expect.poll(async () => (await ledgerOf(stack.client, day))?.pending).toEqual([]);
    expect((await ledgerOf(stack.client, day))?.totalTokens).toBe(ledgerBefore?.totalTokens ?? 0);
    await expect
      .poll(async () => (await stack.client.tenantBudget(day)).total.totalTokens)
      .toBe(budgetBefore.total.totalTokens);
    // The restored session works as before.
    stack.fake.script(fakeReply([fakeText("after the restore")]));
    await stack.client.prompt(sid, "are you back?");
    await idle(sid, 8);
    const again = await stack.client.restoreSession(sid).catch((e: unknown) => e);
    expect(again).toMatchObject({ code: "conflict" });
  });

  it("a runner that was down when a session was deleted removes its workspace when it starts", async () => {
    const sid = "lc-sweep-1";
    await sessionWithToolRun(sid);
    await sessionWithToolRun("lc-sweep-live");
    await stack.runner.stop({ graceMs: 0 });
    await stack.client.deleteSession(sid);
    expect(existsSync(join(stack.workspace, sid))).toBe(true);
    const nc = await connectNats({ url: stack.nats.url, name: "lifecycle-sweep-runner" });
    const runner = createToolRunner({ nc, tools: builtinTools, workspaceRoot: stack.workspace, logger: silent });
    try {
      expect(await runner.start()).toEqual({ ok: true });
      await expect.poll(() => existsSync(join(stack.workspace, sid))).toBe(false);
      // A live session's workspace stays.
      expect(existsSync(join(stack.workspace, "lc-sweep-live"))).toBe(true);
    } finally {
      await runner.stop({ graceMs: 0 });
      await nc.close();
    }
  });
});
