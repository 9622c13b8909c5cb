// Runs the loop service's real entry point as a child process (node-entry.ts), for crash tests.
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { KV_BUCKETS } from "@fleet/protocol";
import { LeaseValue, readKvEntries } from "@fleet/runtime";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { nodeArgsFor } from "./node-entry.js";

const ROOT = join(import.meta.dirname, "..", "..");

export interface LoopProcess {
  proc: ChildProcess;
  workerId: string;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export function spawnLoop(env: Record<string, string>, workerId: string): LoopProcess {
  const proc = spawn(process.execPath, nodeArgsFor(join(ROOT, "services/loop/src/main.ts")), {
    env: { ...process.env, LOG_LEVEL: "info", FLEET_WORKER_ID: workerId, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout?.on("data", (d) => (out += d));
  proc.stderr?.on("data", (d) => (out += d));
  return {
    proc,
    workerId,
    output: () => out,
    kill(signal = "SIGTERM") {
      if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
      const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
      proc.kill(signal);
      return exited;
    },
  };
}

/** Waits until the process logged `evt` (pino JSON), or fails with its output. */
export async function waitForLog(p: LoopProcess, evt: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (p.output().includes(`"evt":"${evt}"`)) return;
    if (p.proc.exitCode !== null) throw new Error(`loop exited (${p.proc.exitCode}): ${p.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no ${evt} within ${timeoutMs} ms: ${p.output()}`);
}

/** The environment of a loop worker for crash tests: short lease, fast coalescing, ops on a free port. */
function crashLoopEnv(natsUrl: string, leaseTtlMs: number, graceMs: number): Record<string, string> {
  return {
    NATS_URL: natsUrl,
    FLEET_LEASE_TTL_MS: String(leaseTtlMs),
    FLEET_COALESCE_MS: "10",
    FLEET_SHUTDOWN_GRACE_MS: String(graceMs),
    FLEET_OPS_PORT: "0",
  };
}

/** The environment of a scripted loop worker for crash tests (see `crashLoopEnv`). */
export function scriptedLoopEnv(
  natsUrl: string,
  script: string,
  leaseTtlMs: number,
  graceMs = 500,
): Record<string, string> {
  return { ...crashLoopEnv(natsUrl, leaseTtlMs, graceMs), FLEET_PROVIDER: "scripted", FLEET_SCRIPT: script };
}

/** The environment of a loop worker on the fake Anthropic API at `fakeUrl`, for crash tests. */
export function anthropicLoopEnv(
  natsUrl: string,
  fakeUrl: string,
  leaseTtlMs: number,
  graceMs = 200,
): Record<string, string> {
  return {
    ...crashLoopEnv(natsUrl, leaseTtlMs, graceMs),
    FLEET_PROVIDER: "anthropic",
    ANTHROPIC_API_KEY: "sk-test",
    ANTHROPIC_BASE_URL: fakeUrl,
  };
}

/** Who holds each loop partition lease now (KV `fleet_leases`, keys `loop.p.<p>`), by partition. */
export async function loopLeaseHolders(nc: NatsConnection): Promise<Map<number, string>> {
  const kv = await new Kvm(nc).open(KV_BUCKETS.leases.name);
  const out = new Map<number, string>();
  for (const entry of await readKvEntries(kv, "loop.p.*")) {
    const v = LeaseValue.safeParse(entry.json());
    if (v.success) out.set(Number(entry.key.split(".")[2]), v.data.workerId);
  }
  return out;
}
