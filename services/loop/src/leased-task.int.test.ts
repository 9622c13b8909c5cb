// A leased periodic task on a real nats-server: of two workers, only the lease holder runs passes,
// one at a time and again `everyMs` after each; a failed pass is reported and the next one runs; the
// other worker takes over once the holder stops, and the stopped one runs no more.
import { applyTopology, connectNats, createLogger } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LeasedTask, startLeasedTask } from "./leased-task.js";

const TTL = 1_000;
let server: NatsServer;
let nc: NatsConnection;
const tasks: LeasedTask[] = [];

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "leased-task-test" });
});
afterAll(async () => {
  for (const t of tasks) await t.stop();
  await nc?.close();
  await server?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("leased periodic task", () => {
  it("runs on the holder only, never overlapping, and moves to the other worker when the holder stops", async () => {
    const topo = await applyTopology(nc, { leaseTtlMs: TTL });
    const passes: string[] = [];
    const failures: string[] = [];
    let inPass = 0;
    let overlapped = false;
    const worker = (id: string) => {
      let n = 0;
      const task = startLeasedTask({
        kv: topo.kv.leases,
        leaseKey: "loop.test-task",
        workerId: id,
        ttlMs: TTL,
        everyMs: 50,
        now: Date.now,
        logger: createLogger("leased-task-test", { level: "silent" }),
        pass: async () => {
          overlapped ||= inPass > 0;
          inPass++;
          n++;
          passes.push(id);
          await sleep(20);
          inPass--;
          if (n === 2) throw new Error(`pass 2 of ${id} fails`);
        },
        onFailed: (err) => failures.push((err as Error).message),
      });
      tasks.push(task);
      return task;
    };

    const a = worker("w-a");
    await a.start();
    const b = worker("w-b");
    await b.start();
    expect(a.holds()).toBe(true);
    expect(b.holds()).toBe(false);
    // Passes asked for meanwhile join the one running.
    const [first, second] = [a.run(), a.run()];
    expect(first).toBe(second);
    await first;
    await expect.poll(() => passes.length, { timeout: 5_000 }).toBeGreaterThanOrEqual(4);
    expect(new Set(passes)).toEqual(new Set(["w-a"]));
    expect(failures).toEqual(["pass 2 of w-a fails"]);

    await a.stop();
    expect(a.holds()).toBe(false);
    const stoppedAt = passes.length;
    await expect.poll(() => b.holds(), { timeout: 3 * TTL }).toBe(true);
    await expect.poll(() => passes.slice(stoppedAt).filter((id) => id === "w-b").length).toBeGreaterThanOrEqual(3);
    expect(passes.slice(stoppedAt)).not.toContain("w-a");
    expect(await b.writable()).toBe(true);
    expect(await a.writable()).toBe(false);
    expect(overlapped).toBe(false);
  });
});
