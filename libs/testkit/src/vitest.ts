// vitest lifecycle helpers (`@fleet/testkit/vitest`): start in beforeAll, stop in afterAll.
// Kept apart from the main entry so non-test code can import the core helpers without vitest.

import { afterAll, beforeAll } from "vitest";
import { type FakeAnthropic, type FakeAnthropicOptions, startFakeAnthropic } from "./fake-anthropic-server.js";
import { type NatsCluster, type NatsClusterOptions, startNatsCluster } from "./nats-cluster.js";
import { type NatsServer, type NatsServerOptions, startNats } from "./nats-server.js";
import { type RedisServer, type RedisServerOptions, startRedis } from "./redis-server.js";

/**
 * Returns the resource started by the surrounding `beforeAll`.
 * Contract: throws when called before `beforeAll` ran (e.g. at collection time) or after `afterAll`.
 */
export type UseResource<T> = () => T;

function useResource<T extends { stop(): Promise<void> }>(what: string, start: () => Promise<T>): UseResource<T> {
  let resource: T | undefined;
  beforeAll(async () => {
    resource = await start();
  });
  afterAll(async () => {
    const current = resource;
    resource = undefined;
    await current?.stop();
  });
  return () => {
    if (resource === undefined)
      throw new Error(`${what} is only available inside tests (between beforeAll and afterAll)`);
    return resource;
  };
}

/** Starts a nats-server for the enclosing `describe` (or file). */
export function useNats(opts?: NatsServerOptions): UseResource<NatsServer> {
  return useResource("useNats()", () => startNats(opts));
}

/** Starts a JetStream cluster of `size` nodes for the enclosing `describe` (or file). */
export function useNatsCluster(size = 3, opts?: NatsClusterOptions): UseResource<NatsCluster> {
  return useResource("useNatsCluster()", () => startNatsCluster(size, opts));
}

/** Starts a redis-server for the enclosing `describe` (or file). */
export function useRedis(opts?: RedisServerOptions): UseResource<RedisServer> {
  return useResource("useRedis()", () => startRedis(opts));
}

/** Starts the fake Anthropic API for the enclosing `describe` (or file). Call `reset()` between tests as needed. */
export function useFakeAnthropic(opts?: FakeAnthropicOptions): UseResource<FakeAnthropic> {
  return useResource("useFakeAnthropic()", () => startFakeAnthropic(opts));
}
