// A whole stack for gateway tests: real nats-server and redis-server, the session store, a tool
// runner with the built-in tools, a loop worker talking to the fake Anthropic API, and the gateway.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient } from "@fleet/client";
import {
  type Gateway,
  type GatewayOptions,
  startGateway,
  type TokenTable,
  tokenTable,
  webOptionsOf,
} from "@fleet/gateway";
import { createAnthropicStreamFn, type LoopWorker } from "@fleet/loop";
import { applyTopology, connectNats, createLogger } from "@fleet/runtime";
import { type StoreService, startStoreService } from "@fleet/session-store";
import {
  type FakeAnthropic,
  type NatsServer,
  type RedisServer,
  startFakeAnthropic,
  startNats,
  startRedis,
} from "@fleet/testkit";
import { builtinTools, createToolRunner, type ToolRunner } from "@fleet/tools";
import type { NatsConnection } from "@nats-io/transport-node";
import { type CliResult, runCli } from "../client/support/run-cli.js";
import { startTestWorker } from "../support/loop-harness.js";

export const PARTITIONS = 4;
export const silent = createLogger("gateway-test", { level: process.env.LOG_LEVEL ?? "silent" });

export interface GatewayStack {
  nats: NatsServer;
  redis: RedisServer;
  fake: FakeAnthropic;
  worker: LoopWorker;
  store: StoreService;
  runner: ToolRunner;
  workspace: string;
  /** An SDK client on the same deployment, for checks. */
  client: FleetClient;
  gateway: Gateway;
  /** Starts another gateway on the same deployment (the caller closes it). */
  startGateway(overrides?: Partial<GatewayOptions>): Promise<Gateway>;
  stop(): Promise<void>;
}

export function gatewayOptions(natsUrl: string, overrides: Partial<GatewayOptions> = {}): GatewayOptions {
  return {
    natsUrl,
    host: "127.0.0.1",
    port: 0,
    tokens: undefined as TokenTable | undefined,
    commandTimeoutMs: 10_000,
    keepaliveMs: 15_000,
    sseBufferBytes: 1024 * 1024,
    bodyLimitBytes: 16 * 1024 * 1024,
    webhookBackoffMs: 100,
    webhookBackoffMaxMs: 1_000,
    webhookTimeoutMs: 2_000,
    // The tests' webhook receivers listen on 127.0.0.1.
    web: { ...webOptionsOf(), webhookAllowance: { kind: "all" } },
    logger: silent,
    ...overrides,
  };
}

export async function startGatewayStack(
  opts: {
    gateway?: Partial<GatewayOptions>;
    approvalTools?: string[];
    inputTtlMs?: number;
    /** Session lifecycle settings of the loop worker (archive directory, retention). */
    lifecycle?: import("@fleet/loop").LoopLifecycleOptions;
    /** The loop worker's logger (default silent). */
    loopLogger?: import("@fleet/runtime").Logger;
    /** K, the event log's stream groups (default 1); every service takes it from the log. */
    groups?: number;
    /** The loop worker's sub-agent settings (change 57); absent: no `agent` tool. */
    subAgents?: import("@fleet/loop").SubAgentSettings;
  } = {},
): Promise<GatewayStack> {
  const nats = await startNats();
  const redis = await startRedis();
  const fake = await startFakeAnthropic();
  const setup = await connectNats({ url: nats.url, name: "gateway-test-setup" });
  await applyTopology(setup, {
    partitions: PARTITIONS,
    groups: opts.groups,
    leaseTtlMs: 2_000,
    ...(opts.inputTtlMs ? { inputTtlMs: opts.inputTtlMs } : {}),
  });
  await setup.close();
  const store = await startStoreService({
    natsUrl: nats.url,
    redisUrl: redis.url,
    prefix: "fleet:store",
    workerId: "store-gw-test",
    partitions: PARTITIONS,
    leaseTtlMs: 2_000,
    opsPort: 0,
    cacheEntries: 1_000_000,
    maxBatch: 500,
    logger: silent,
  });
  const workspace = mkdtempSync(join(tmpdir(), "fleet-gw-ws-"));
  const runnerNc: NatsConnection = await connectNats({ url: nats.url, name: "gateway-test-runner" });
  const runner = createToolRunner({
    nc: runnerNc,
    tools: builtinTools,
    workspaceRoot: workspace,
    updateIntervalMs: 0,
    logger: silent,
  });
  const started = await runner.start();
  if (!started.ok) throw new Error(`tool runner did not start: ${JSON.stringify(started)}`);
  const loop = await startTestWorker({
    url: nats.url,
    partitions: PARTITIONS,
    providers: { anthropic: createAnthropicStreamFn({ apiKey: "sk-test", baseURL: fake.url, maxRetries: 0 }) },
    defaultProvider: "anthropic",
    coalesceMs: 10,
    ...(opts.approvalTools ? { approvalTools: opts.approvalTools } : {}),
    ...(opts.lifecycle ? { lifecycle: opts.lifecycle } : {}),
    ...(opts.loopLogger ? { logger: opts.loopLogger } : {}),
    ...(opts.subAgents ? { subAgents: opts.subAgents } : {}),
  });
  const client = await FleetClient.connect({ natsUrl: nats.url, name: "gateway-test-client" });
  const gateways: Gateway[] = [];
  const launch = async (overrides: Partial<GatewayOptions> = {}) => {
    const gateway = await startGateway(gatewayOptions(nats.url, { ...opts.gateway, ...overrides }));
    await gateway.ready;
    return gateway;
  };
  const gateway = await launch();
  gateways.push(gateway);
  return {
    nats,
    redis,
    fake,
    worker: loop.worker,
    store,
    runner,
    workspace,
    client,
    gateway,
    startGateway: launch,
    async stop() {
      for (const g of gateways) await g.close().catch(() => undefined);
      await client.close().catch(() => undefined);
      await loop.worker.stop().catch(() => undefined);
      await loop.nc.close().catch(() => undefined);
      await runner.stop({ graceMs: 0 }).catch(() => undefined);
      await runnerNc.close().catch(() => undefined);
      await store.stop().catch(() => undefined);
      await fake.stop();
      await redis.stop();
      await nats.stop();
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

/** A parsed JSON answer; tests check its shape with assertions (and against the OpenAPI document). */
// biome-ignore lint/suspicious/noExplicitAny: answers are checked by the assertions that read them
type Answer = any;

/** JSON request against the gateway: status, headers and parsed body (or text when not JSON). */
export async function call(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; text?: string; contentType?: string; token?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Answer; text: string; headers: Headers }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] = "application/json";
  } else if (opts.text !== undefined) {
    body = opts.text;
    headers["content-type"] = opts.contentType ?? "application/jsonl";
  }
  const res = await fetch(`${base}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text, headers: res.headers };
}

/** Waits until the session holds `messages` agent messages and no run streams. */
/** The `fleet` CLI against the stack's NATS, its home (`FLEET_HOME`) and working directory in `dir`. */
export const fleetCliOf =
  (stack: GatewayStack, dir: string) =>
  (args: string[]): Promise<CliResult> =>
    runCli(["--nats", stack.nats.url, ...args], {
      cwd: dir,
      env: { FLEET_HOME: join(dir, ".fleet") },
      timeoutMs: 60_000,
    });

export async function waitIdle(client: FleetClient, sessionId: string, messages: number): Promise<void> {
  const live = await client.state(sessionId);
  try {
    await live.waitFor((v) => v.agent.messages.length >= messages && !v.agent.isStreaming, 30_000);
  } finally {
    live.close();
  }
}

/** Tenant acme's two tokens: one with the operate role, one with the read role. */
export function acmeTokens(operate: string, read: string): TokenTable {
  return tokenTable({
    tokens: [
      { token: operate, tenant: "acme", role: "operate" },
      { token: read, tenant: "acme", role: "read" },
    ],
    tenants: {},
  });
}
