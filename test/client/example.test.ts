// The README's runnable example (libs/client/examples/quickstart.ts) runs against a real server.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { NatsServer } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLoopServer, startFakeLoopServer } from "./support/fake-loop.js";
import { cliEnv, collect } from "./support/run-cli.js";

const EXAMPLE = fileURLToPath(new URL("../../libs/client/examples/quickstart.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

let server: NatsServer;
let stack: FakeLoopServer;

beforeAll(async () => {
  stack = await startFakeLoopServer();
  ({ server } = stack);
});

afterAll(async () => {
  await stack?.stop();
});

describe("libs/client README example", () => {
  it("runs end to end", async () => {
    const child = spawn(process.execPath, ["--conditions=@fleet/source", "--import", "tsx", EXAMPLE], {
      cwd: ROOT,
      env: cliEnv({ NATS_URL: server.url }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const result = await collect(child, 60_000);
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toMatch(/^session s-[a-z0-9]+ \(partition [0-3] of 4\)$/);
    expect(lines.slice(1)).toEqual([
      "echo: List the files in the workspace.",
      expect.stringMatching(/^\[agent_end at seq \d+\]$/),
      "messages: user, assistant; streaming: false",
      expect.stringMatching(/^at seq \d+: 0 messages, 0 entries$/),
      "rejected: not_found (Entry no-such-entry not found)",
      "",
    ]);
  });
});
