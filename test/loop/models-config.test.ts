// The loop process's model configuration: FLEET_MODELS (pi's models.json) and a provider/modelId
// FLEET_DEFAULT_MODEL, against the fake OpenAI server; a file the loop cannot use stops it at start.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FleetEvent } from "@fleet/protocol";
import { connectNats } from "@fleet/runtime";
import { type FakeOpenAI, type NatsServer, openAIReply, startFakeOpenAI, startNats } from "@fleet/testkit";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commander } from "../support/loop-harness.js";
import { type LoopProcess, spawnLoop, waitForLog } from "../support/loop-process.js";

const KEY = "sk-process-test";
let server: NatsServer;
let fake: FakeOpenAI;
let nc: NatsConnection;
let dir: string;
const loops: LoopProcess[] = [];

beforeAll(async () => {
  server = await startNats();
  fake = await startFakeOpenAI({ apiKey: KEY });
  nc = await connectNats({ url: server.url, name: "models-config-test" });
  dir = mkdtempSync(join(tmpdir(), "fleet-models-"));
});
afterAll(async () => {
  for (const loop of loops) await loop.kill();
  await nc?.close();
  await fake?.stop();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function loopWith(env: Record<string, string>, workerId: string): LoopProcess {
  const loop = spawnLoop({ NATS_URL: server.url, FLEET_OPS_PORT: "0", FLEET_COALESCE_MS: "10", ...env }, workerId);
  loops.push(loop);
  return loop;
}

async function exitOf(loop: LoopProcess): Promise<number | null> {
  if (loop.proc.exitCode !== null) return loop.proc.exitCode;
  return new Promise((resolve) => loop.proc.once("exit", (code) => resolve(code)));
}

describe("loop process / FLEET_MODELS and FLEET_DEFAULT_MODEL", () => {
  // Each loop is a tsx start-up of the real entry point: slow on a loaded machine.
  it("a new session runs on the default model from models.json, with the key from the variable it names", {
    timeout: 120_000,
  }, async () => {
    const file = join(dir, "models.json");
    writeFileSync(
      file,
      `{
        // an OpenAI-compatible server
        "providers": {
          "local": {
            "baseUrl": "${fake.url}",
            "api": "openai-completions",
            "apiKey": "LOCAL_MODEL_KEY",
            "models": [{ "id": "qwen-coder", "cost": { "input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0 } }],
          },
        },
      }`,
    );
    const loop = loopWith(
      { FLEET_MODELS: file, FLEET_DEFAULT_MODEL: "local/qwen-coder", LOCAL_MODEL_KEY: KEY },
      "loop-models-ok",
    );
    await waitForLog(loop, "loop_started", 45_000);
    fake.script(openAIReply("hello from the local model", { usage: { input: 100, output: 50 } }));
    const cmd = commander(nc);
    await cmd.send("models-1", { type: "prompt", text: "hi" });
    const events = await cmd.waitFor("models-1", (ev) => ev.some((e) => e.type === "agent_end"), 20_000);
    const created = events.find((e) => e.type === "session_created");
    expect(created?.type === "session_created" && created.config.model).toEqual({
      provider: "local",
      modelId: "qwen-coder",
    });
    const end = events.findLast((e): e is FleetEvent & { type: "message_end" } => e.type === "message_end");
    expect(end?.message).toMatchObject({
      role: "assistant",
      provider: "local",
      model: "qwen-coder",
      stopReason: "stop",
      content: [{ type: "text", text: "hello from the local model" }],
      usage: { input: 100, output: 50 },
    });
    expect(end?.message.role === "assistant" && end.message.usage.cost.total).toBeCloseTo((100 * 1 + 50 * 2) / 1e6, 12);
    expect(fake.requests[0]?.apiKey).toBe(KEY);
    expect(loop.output()).not.toContain(KEY);
  });

  it("an invalid models.json, or a default model nobody knows, exits 2 naming the problem", {
    timeout: 120_000,
  }, async () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ providers: { x: { api: "openai-completions", models: [{ id: "m" }] } } }));
    const invalid = loopWith({ FLEET_MODELS: bad, FLEET_DEFAULT_MODEL: "x/m" }, "loop-models-bad");
    expect(await exitOf(invalid)).toBe(2);
    expect(invalid.output()).toContain('provider x: "baseUrl" is required when defining custom models');

    const unknown = loopWith({ FLEET_DEFAULT_MODEL: "openai/no-such-model" }, "loop-models-unknown");
    expect(await exitOf(unknown)).toBe(2);
    expect(unknown.output()).toContain(
      "FLEET_DEFAULT_MODEL openai/no-such-model is neither a pi-ai model nor in FLEET_MODELS",
    );
  });
});
