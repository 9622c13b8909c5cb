// The world of a file of crash tests on loop processes driving the real Anthropic SDK: a nats-server,
// the fake Anthropic API, a connection for the test, and the loop workers it spawns (the service's
// entry point), each SIGKILLed after the file if still alive.
import { connectNats } from "@fleet/runtime";
import { type FakeAnthropic, type NatsServer, startFakeAnthropic, startNats } from "@fleet/testkit";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
import { anthropicLoopEnv, type LoopProcess, spawnLoop } from "./loop-process.js";

export interface LoopCrashWorld {
  server: NatsServer;
  fake: FakeAnthropic;
  nc: NatsConnection;
  /** Spawns a loop worker on the fake (lease `leaseTtlMs`, grace 200 ms, plus the world's `env`). */
  spawn(workerId: string): LoopProcess;
}

/**
 * Registers the file's `beforeAll`/`afterAll`; the returned world's fields are set once `beforeAll`
 * ran, so read them inside tests and hooks only.
 */
export function useLoopCrashWorld(opts: {
  /** The test connection's name. */
  name: string;
  leaseTtlMs: number;
  /** More environment for every loop worker. */
  env?: Record<string, string>;
}): LoopCrashWorld {
  const procs: LoopProcess[] = [];
  const world = {
    spawn(workerId: string) {
      const env = { ...anthropicLoopEnv(world.server.url, world.fake.url, opts.leaseTtlMs), ...opts.env };
      const p = spawnLoop(env, workerId);
      procs.push(p);
      return p;
    },
  } as LoopCrashWorld;
  beforeAll(async () => {
    world.server = await startNats();
    world.fake = await startFakeAnthropic();
    world.nc = await connectNats({ url: world.server.url, name: opts.name });
  });
  afterAll(async () => {
    for (const p of procs) await p.kill("SIGKILL");
    await world.nc?.close();
    await world.fake?.stop();
    await world.server?.stop();
  });
  return world;
}
