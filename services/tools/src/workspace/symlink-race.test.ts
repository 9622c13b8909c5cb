// The symlink race against the file tools, at the tool level: a real `bash` call in the real
// bubblewrap sandbox swaps the workspace directory `d` with a symlink `l` to a directory outside,
// about every few microseconds, while write, edit, read, ls, find and grep run through `d`.
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBuiltinTools } from "../builtin/index.js";
import { flipCommand, layRaceScene, racingCalls, showsOutside, untilFlipping } from "../testing/symlink-race.js";
import { createHarness, type Harness, textOf } from "../testing/tool-harness.js";
import { isInside } from "./workspace-path.js";

const tools = createBuiltinTools();
const ROUNDS = 4;
const FLIP_SECONDS = 2;

interface CallRecord {
  tool: string;
  start: number;
  end: number;
  ok: boolean;
  outside: boolean;
}

describe("file tools against a symlink swapped by a parallel bash call (real bwrap)", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness();
    expect(h.ctx.sandbox.status.mode).toBe("bwrap");
  });
  afterEach(() => h.cleanup());

  it("no write, edit, read, ls, find or grep reaches outside, in calls that provably overlapped the swaps", async () => {
    const scene = await layRaceScene(h.root, h.outside);
    const before = await scene.snapshot();
    const records: CallRecord[] = [];
    let racing = 0;
    for (let round = 0; round < ROUNDS; round++) {
      let flipDone = false;
      const flip = h.run(tools.bash, { command: flipCommand("d", "l", FLIP_SECONDS) }).finally(() => {
        flipDone = true;
      });
      const flipStart = await untilFlipping(h.root);
      const inRound: CallRecord[] = [];
      while (!flipDone) {
        await Promise.all(
          racingCalls(round, 3).map(async ({ tool, args }) => {
            const start = Date.now();
            const out = await h.run(tools[tool as keyof typeof tools], args).then(
              (r) => ({ ok: !r.isError, json: JSON.stringify(r) }),
              (err: Error) => ({ ok: false, json: JSON.stringify(err.message) }),
            );
            inRound.push({ tool, start, end: Date.now(), ok: out.ok, outside: showsOutside(out.json) });
          }),
        );
      }
      const flipped = textOf(await flip).trim();
      const flipEnd = Date.now();
      expect(flipped).toMatch(/^flips \d+$/);
      const flips = Number(flipped.split(" ")[1]);
      // A call counts as racing only when it ran entirely while the swaps went on.
      const overlapped = inRound.filter((c) => c.start >= flipStart && c.end <= flipEnd);
      racing += overlapped.length;
      records.push(...overlapped);
      expect(flips / ((flipEnd - flipStart) / 1000), "swaps per second").toBeGreaterThan(1_000);
    }
    const byTool = new Map<string, { tried: number; ok: number; refused: number; outside: number }>();
    for (const r of records) {
      const t = byTool.get(r.tool) ?? { tried: 0, ok: 0, refused: 0, outside: 0 };
      t.tried++;
      if (r.ok) t.ok++;
      else t.refused++;
      if (r.outside) t.outside++;
      byTool.set(r.tool, t);
    }
    console.info(`symlink race: ${racing} racing calls`, Object.fromEntries(byTool));
    for (const tool of ["write", "edit", "read", "ls", "find", "grep"]) {
      const t = byTool.get(tool);
      // Each tool saw both states of `d` (it worked through the directory and was refused through
      // the link), so its calls did meet the swaps.
      expect(t?.tried, tool).toBeGreaterThanOrEqual(20);
      expect(t?.ok, `${tool} calls that went through the directory`).toBeGreaterThan(0);
      expect(t?.outside, `${tool} results showing outside content`).toBe(0);
    }
    expect(records.filter((r) => !r.ok).length, "calls refused through the link").toBeGreaterThan(0);
    expect(await scene.snapshot(), "nothing outside written or changed").toBe(before);
  }, 120_000);

  it("the same race gets a check-then-open write outside (the control: the race is real)", async () => {
    await layRaceScene(h.root, h.outside);
    // The file tools before this change: realpath the parent, check it is inside, then write by path.
    const checkThenWrite = async (rel: string) => {
      const real = await realpath(dirname(join(h.root, rel))).catch(() => null);
      if (!real || !isInside(h.root, real)) return;
      await mkdir(real, { recursive: true }).catch(() => undefined);
      await writeFile(join(real, basename(rel)), "x").catch(() => undefined);
    };
    const { readdir } = await import("node:fs/promises");
    const escaped = async () => (await readdir(join(h.outside, "o"))).filter((n) => n.startsWith("naive-")).length;
    let tried = 0;
    for (let round = 0; round < 3 && (await escaped()) === 0; round++) {
      let flipDone = false;
      const flip = h.run(tools.bash, { command: flipCommand("d", "l", 1) }).finally(() => {
        flipDone = true;
      });
      await untilFlipping(h.root);
      while (!flipDone) {
        await Promise.all(Array.from({ length: 20 }, (_, i) => checkThenWrite(`d/naive-${round}-${tried + i}.txt`)));
        tried += 20;
      }
      await flip;
    }
    console.info(`symlink race control: ${await escaped()} of ${tried} check-then-open writes landed outside`);
    expect(await escaped()).toBeGreaterThan(0);
  }, 60_000);
});
