// The world of a file of loop tests on the real Anthropic SDK: a nats-server, the fake Anthropic
// server, and an in-process loop worker whose provider `anthropic` (the default) calls the fake.
import { createAnthropicStreamFn, type LoopWorker } from "@fleet/loop";
import { type FakeAnthropic, type NatsServer, startFakeAnthropic, startNats } from "@fleet/testkit";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
import { commander, startTestWorker } from "./loop-harness.js";

export interface AnthropicWorker {
  server: NatsServer;
  fake: FakeAnthropic;
  worker: LoopWorker;
  /** The worker's connection (the tests' too). */
  nc: NatsConnection;
  cmd: ReturnType<typeof commander>;
}

/**
 * Registers the file's `beforeAll`/`afterAll`; the returned fields are set once `beforeAll` ran, so
 * read them inside tests and hooks only.
 */
export function useAnthropicWorker(
  opts: {
    /** The SDK's own retries (default 0). */
    maxRetries?: number;
  } & Omit<Parameters<typeof startTestWorker>[0], "url" | "providers" | "defaultProvider"> = {},
): AnthropicWorker {
  const { maxRetries = 0, ...workerOpts } = opts;
  const w = {} as AnthropicWorker;
  beforeAll(async () => {
    w.server = await startNats();
    w.fake = await startFakeAnthropic();
    const started = await startTestWorker({
      ...workerOpts,
      url: w.server.url,
      providers: { anthropic: createAnthropicStreamFn({ apiKey: "sk-test", baseURL: w.fake.url, maxRetries }) },
      defaultProvider: "anthropic",
    });
    w.worker = started.worker;
    w.nc = started.nc;
    w.cmd = commander(started.nc);
  });
  afterAll(async () => {
    await w.worker?.stop();
    await w.nc?.close();
    await w.fake?.stop();
    await w.server?.stop();
  });
  return w;
}
