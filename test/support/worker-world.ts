// The world of a file of loop tests on an in-process worker: a nats-server and a loop worker on it,
// whose default provider is the real Anthropic SDK against the fake Anthropic server
// (`useAnthropicWorker`) or a scripted provider the test swaps between prompts (`useScriptedWorker`).
import { createAnthropicStreamFn, type LoopWorker, type StreamFn } from "@fleet/loop";
import { type FakeAnthropic, type NatsServer, startFakeAnthropic, startNats } from "@fleet/testkit";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
import { commander, type SwitchableProvider, startTestWorker, switchableProvider } from "./loop-harness.js";

type WorkerOptions = Omit<Parameters<typeof startTestWorker>[0], "url" | "providers" | "defaultProvider">;

export interface WorkerWorld {
  server: NatsServer;
  worker: LoopWorker;
  /** The worker's connection (the tests' too). */
  nc: NatsConnection;
  cmd: ReturnType<typeof commander>;
}

export interface AnthropicWorker extends WorkerWorld {
  fake: FakeAnthropic;
}

export interface ScriptedWorker extends WorkerWorld {
  /** The worker's provider `scripted` (its default): `scripted.use(...)` before a prompt. */
  scripted: SwitchableProvider;
}

/**
 * Both register the file's `beforeAll`/`afterAll`; the returned fields are set once `beforeAll` ran,
 * so read them inside tests and hooks only.
 */
export function useAnthropicWorker(
  opts: { /** The SDK's own retries (default 0). */ maxRetries?: number } & WorkerOptions = {},
) {
  const { maxRetries = 0, ...workerOpts } = opts;
  const w = {} as AnthropicWorker;
  useWorker(w, workerOpts, "anthropic", {
    start: async () => {
      w.fake = await startFakeAnthropic();
      return createAnthropicStreamFn({ apiKey: "sk-test", baseURL: w.fake.url, maxRetries });
    },
    stop: async () => w.fake?.stop(),
  });
  return w;
}

export function useScriptedWorker(opts: WorkerOptions = {}) {
  const w = { scripted: switchableProvider() } as ScriptedWorker;
  useWorker(w, opts, "scripted", { start: async () => w.scripted.streamFn });
  return w;
}

/** `provider.start` makes the default provider once nats-server runs; `provider.stop` ends what it started. */
function useWorker(
  w: WorkerWorld,
  opts: WorkerOptions,
  name: string,
  provider: { start: () => Promise<StreamFn>; stop?: () => Promise<void> },
) {
  beforeAll(async () => {
    w.server = await startNats();
    const started = await startTestWorker({
      ...opts,
      url: w.server.url,
      providers: { [name]: await provider.start() },
      defaultProvider: name,
    });
    w.worker = started.worker;
    w.nc = started.nc;
    w.cmd = commander(started.nc);
  });
  afterAll(async () => {
    await w.worker?.stop();
    await w.nc?.close();
    await provider.stop?.();
    await w.server?.stop();
  });
}
