// The chaos suite's smoke run inside `npm test`: the real program, 30 s, a fixed seed, a few sessions.
// It draws only from fault kinds Fleet already survives (SMOKE_FAULTS); `npm run chaos` draws from all.
// Not yet here: pause_loop (tools aborted on lease loss), NATS faults ("No live tool runner"), Redis
// faults (store not healed), kill_runner (a retry: safe call waits for ack_wait, 30 s).
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..", "..");
const SEED = "7";
const SMOKE_FAULTS = "kill_loop,kill_store,kill_gateway";
let child: ChildProcess | undefined;

afterAll(() => {
  // SIGTERM makes the program stop every process it started.
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
});

describe("chaos / smoke run", () => {
  it(`a 30-second run (seed ${SEED}, faults ${SMOKE_FAULTS}) reports faults, prompts done and 0 violations`, async () => {
    const args = ["--duration", "30", "--sessions", "6", "--seed", SEED, "--faults", SMOKE_FAULTS];
    const proc = spawn(
      process.execPath,
      ["--conditions=@fleet/source", "--import", "tsx", join(ROOT, "test/chaos/main.ts"), ...args],
      { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    child = proc;
    let out = "";
    proc.stdout?.on("data", (d) => (out += d));
    proc.stderr?.on("data", (d) => (out += d));
    const code = await new Promise<number | null>((resolve) => proc.once("exit", (c) => resolve(c)));
    const last = out.trim().split("\n").at(-1) ?? "";
    const match = /^chaos: (\d+) faults, 6 sessions, (\d+) prompts done, (\d+) violations$/.exec(last);
    expect(match, out).not.toBeNull();
    expect(Number(match?.[1])).toBeGreaterThan(0);
    expect(Number(match?.[2])).toBeGreaterThan(6);
    expect(Number(match?.[3]), out).toBe(0);
    expect(code, out).toBe(0);
  }, 300_000);
});
