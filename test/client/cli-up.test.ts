// `fleet up` with no NATS_URL/REDIS_URL: its own nats-server and redis-server on free ports with data
// under .fleet/, the workers it can start in this checkout, a restart after a crash, and a clean
// shutdown on SIGTERM that leaves no process behind.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { getFreePort, isPidAlive } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, runCli, spawnCli, stopClis, waitForOutput } from "./support/run-cli.js";

interface Stack {
  natsUrl: string;
  redisUrl: string;
  pid: number;
  workspace: string;
  provider: string;
  services: { name: string; pid: number | null }[];
  gatewayUrl?: string | null;
}

const SERVICE_MAINS: Record<string, string> = {
  loop: "services/loop/src/main.ts",
  tools: "services/tools/src/main.ts",
  store: "services/session-store/src/main.ts",
  gateway: "services/gateway/src/main.ts",
};
const expectedWorkers = Object.entries(SERVICE_MAINS)
  .filter(([, main]) => existsSync(fileURLToPath(new URL(`../../${main}`, import.meta.url))))
  .map(([name]) => name);

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "fleet-up-"));
});
// A failed test leaves its \`fleet up\` running: it stops here with its servers, before their files go.
afterAll(async () => {
  await stopClis();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

const readStack = (home: string) => JSON.parse(readFileSync(join(home, "stack.json"), "utf8")) as Stack;

describe("fleet up", () => {
  it("starts its own servers and workers, restarts a crashed worker, and stops everything on SIGTERM", async () => {
    const home = join(dir, ".fleet");
    const env = {
      FLEET_HOME: home,
      FLEET_WORKSPACE: join(dir, "ws"),
      FLEET_PARTITIONS: "4",
      FLEET_GATEWAY_PORT: String(await getFreePort()),
    };
    const up = spawnCli(["up"], { cwd: dir, env });
    const finished = collect(up, 120_000);
    const banner = await waitForOutput(up, /Ctrl-C stops everything/, 60_000);

    const stack = readStack(home);
    expect(stack.pid).toBe(up.pid);
    expect(stack.natsUrl).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
    expect(stack.redisUrl).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(stack.natsUrl).not.toBe("nats://127.0.0.1:4222");
    expect(stack.redisUrl).not.toBe("redis://127.0.0.1:6379");
    expect([stack.provider, stack.workspace]).toEqual(["scripted", join(dir, "ws")]);
    expect(stack.services.map((s) => s.name)).toEqual([
      "nats-server",
      "redis-server",
      ...["store", "tools", "loop", "gateway"].filter((n) => expectedWorkers.includes(n)),
    ]);
    expect(banner).toContain(`NATS    ${stack.natsUrl}`);
    expect(banner).toContain(`Redis   ${stack.redisUrl}`);
    expect(banner).toContain("ANTHROPIC_API_KEY is not set: using the scripted demo model");
    expect(existsSync(join(home, "nats", "jetstream"))).toBe(true);
    if (expectedWorkers.includes("gateway")) {
      expect(stack.gatewayUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(banner).toContain(`gateway  ${stack.gatewayUrl}`);
      await expect
        .poll(async () => (await fetch(`${stack.gatewayUrl}/readyz`).catch(() => undefined))?.status, {
          timeout: 30_000,
        })
        .toBe(200);
    }
    const pids = stack.services.map((s) => s.pid as number);
    expect(pids.every((pid) => isPidAlive(pid))).toBe(true);

    // Other commands find the stack through .fleet/stack.json.
    if (expectedWorkers.includes("store")) {
      await expect
        .poll(async () => (await runCli(["sessions"], { cwd: dir, env: { FLEET_HOME: home } })).stdout, {
          timeout: 30_000,
        })
        .toBe("no sessions\n");
    }

    // A crashed worker is reported and restarted with a new pid.
    const victim = stack.services.find((s) => s.name !== "nats-server" && s.name !== "redis-server");
    const allPids = new Set(pids);
    if (victim?.pid) {
      process.kill(victim.pid, "SIGKILL");
      await waitForOutput(
        up,
        new RegExp(`✗ ${victim.name} exited \\(signal SIGKILL\\); restarting in 1s \\(restart #1\\)`),
        20_000,
      );
      await expect
        .poll(() => readStack(home).services.find((s) => s.name === victim.name)?.pid, { timeout: 20_000 })
        .not.toBe(victim.pid);
      const restarted = readStack(home).services.find((s) => s.name === victim.name)?.pid as number;
      expect(isPidAlive(restarted)).toBe(true);
      allPids.add(restarted);
    }

    up.kill("SIGTERM");
    const result = await finished;
    expect([result.code, result.signal]).toEqual([0, null]);
    expect(result.stdout).toContain("stopping…");
    expect([...allPids].filter((pid) => isPidAlive(pid))).toEqual([]);
    expect(existsSync(join(home, "stack.json"))).toBe(false);
  });

  it("a missing server binary is one line with the install command", async () => {
    const result = await runCli(["up"], {
      cwd: dir,
      env: { FLEET_HOME: join(dir, ".fleet-missing"), FLEET_NATS_SERVER: join(dir, "no-such-nats-server") },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `fleet: ${join(dir, "no-such-nats-server")} is not executable. nats-server not found: install it with \`sudo apt-get install -y nats-server\` (or run \`bash scripts/ensure-servers.sh\`), or set NATS_URL to use a running server\n`,
    );
  });
});
