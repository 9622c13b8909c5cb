// The file tools' confinement and the workspace quota through a real tool runner process (main.ts,
// real bwrap, real nats-server): calls published as the loop publishes one assistant message's batch.
import { mkdir, mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { flipCommand, layRaceScene, racingCalls, showsOutside, untilFlipping } from "@fleet/tools/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  finalOf,
  publishCall,
  type RunnerProcess,
  readRecords,
  type Stack,
  spawnRunner,
  startStack,
  stopRunnerProcess,
  textOf,
  until,
  waitForResult,
} from "./support.js";

describe("file tools and the workspace quota in a runner process", () => {
  let stack: Stack;
  let outside: string;
  const procs: RunnerProcess[] = [];
  let n = 0;

  async function call(sessionId: string, toolName: string, args: unknown) {
    const toolCallId = `c${++n}`;
    await publishCall(stack.js, { sessionId, toolCallId, toolName, args });
    return toolCallId;
  }
  async function result(sessionId: string, toolCallId: string, timeoutMs = 30_000) {
    const records = await waitForResult(stack, sessionId, toolCallId, timeoutMs);
    return { records, final: finalOf(records), text: textOf(records) };
  }
  const run = async (sessionId: string, toolName: string, args: unknown) =>
    result(sessionId, await call(sessionId, toolName, args));

  beforeAll(async () => {
    stack = await startStack();
    outside = await mkdtemp(join(tmpdir(), "fleet-race-outside-"));
  });
  afterEach(async () => {
    for (const p of procs.splice(0)) await stopRunnerProcess(p);
  });
  afterAll(async () => {
    await stack?.stop();
    await rm(outside, { recursive: true, force: true });
  });

  it("a batch racing a symlink swap reaches nothing outside; the calls ran during the swaps", async () => {
    procs.push(await spawnRunner(stack, "race-runner", { entry: "main" }));
    const sid = "s-race";
    const root = join(stack.workspaceRoot, sid);
    await mkdir(root, { recursive: true });
    const scene = await layRaceScene(root, outside);
    const before = await scene.snapshot();

    const flipId = await call(sid, "bash", { command: flipCommand("d", "l", 3) });
    const flipStarted = await untilFlipping(root);
    const ids: Array<{ id: string; tool: string }> = [];
    let flipDone = false;
    void result(sid, flipId).then(() => {
      flipDone = true;
    });
    for (let wave = 0; !flipDone && wave < 40; wave++) {
      for (const c of racingCalls(wave, 2)) ids.push({ id: await call(sid, c.tool, c.args), tool: c.tool });
      await until(async () => (await readRecords(stack, sid, ids.at(-1)?.id ?? "")).length > 0 || flipDone, 20_000);
    }
    const flip = await result(sid, flipId);
    expect(flip.text.trim()).toMatch(/^flips \d+$/);
    const flipEnd = flip.records.at(-1)?.at ?? 0;
    let racing = 0;
    let refused = 0;
    for (const { id, tool } of ids) {
      const { records, final } = await result(sid, id);
      expect(showsOutside(JSON.stringify(final)), `${tool} ${id} shows outside content`).toBe(false);
      // Ran while the swaps went on: its first record and its result lie inside the flipper's run.
      if ((records[0]?.at ?? 0) >= flipStarted - 50 && (records.at(-1)?.at ?? Infinity) <= flipEnd) racing++;
      if (final.isError) refused++;
    }
    console.info(`runner symlink race: ${ids.length} calls, ${racing} during the swaps, ${refused} refused`);
    expect(racing).toBeGreaterThanOrEqual(60);
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThan(ids.length);
    expect(await scene.snapshot()).toBe(before);
  }, 90_000);

  it("FLEET_WORKSPACE_QUOTA_MB: writes and commands past the quota fail clearly; a cleanup still runs", async () => {
    procs.push(await spawnRunner(stack, "quota-runner", { entry: "main", env: { FLEET_WORKSPACE_QUOTA_MB: "1" } }));
    const sid = "s-quota";
    // Many small files: the watcher stops the command once the workspace is over the quota.
    const many = await run(sid, "bash", {
      command: "for i in $(seq 1 400); do head -c 20000 /dev/zero > f$i.bin; sleep 0.01; done; echo finished",
    });
    expect(many.final.isError).toBe(true);
    expect(many.text).toMatch(/Command stopped: the workspace grew to .*, over its quota of 1\.0MB/);
    expect(many.text).not.toContain("finished");

    // Over the quota: a command may still remove files, and afterwards commands run again.
    const cleanup = await run(sid, "bash", { command: "rm -f f*.bin && echo cleaned" });
    expect(cleanup.text.trim()).toBe("cleaned");

    const big = "x".repeat(400 * 1024);
    expect((await run(sid, "write", { path: "a.txt", content: big })).final.isError).toBe(false);
    expect((await run(sid, "write", { path: "b.txt", content: big })).final.isError).toBe(false);
    const third = await run(sid, "write", { path: "c.txt", content: big });
    expect(third.final.isError).toBe(true);
    expect(third.text).toMatch(
      /^Workspace quota exceeded: writing 409600 bytes to c\.txt would bring the workspace to/,
    );
    expect(await stat(join(stack.workspaceRoot, sid, "c.txt")).catch(() => null)).toBeNull();

    // One file bigger than the room left: the process's file size limit stops it.
    const oneFile = await run(sid, "bash", { command: "head -c 3000000 /dev/zero > big.bin" });
    expect(oneFile.final.isError).toBe(true);
    expect(oneFile.text).toMatch(/Command stopped: a file reached the .* left in the workspace's 1\.0MB quota/);
    expect((await stat(join(stack.workspaceRoot, sid, "big.bin"))).size).toBeLessThanOrEqual(1024 * 1024 - 800 * 1024);
    // Full: nothing can be written in the command that frees the space, the next one can.
    expect((await run(sid, "bash", { command: "rm big.bin && echo removed" })).text.trim()).toBe("removed");
    const small = await run(sid, "bash", { command: "head -c 1000 /dev/zero > ok.bin && echo ok" });
    expect(small.text.trim()).toBe("ok");
  }, 90_000);
});
