// Starts `fleet up` in a temp dir (its own nats-server and redis-server) and waits until it is ready.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getFreePort } from "@fleet/testkit";
import { type CliResult, collect, runCli, spawnCli, waitForOutput } from "../../client/support/run-cli.js";

export interface FleetStack {
  dir: string;
  home: string;
  workspace: string;
  natsUrl: string;
  up: ChildProcess;
  /** Output of `fleet up` so far. */
  banner: string;
  /** Runs a `fleet` command against this stack. */
  fleet(args: string[], timeoutMs?: number): Promise<CliResult>;
  /** The environment a `fleet` command needs to find this stack. */
  env: NodeJS.ProcessEnv;
  stop(): Promise<CliResult>;
}

/** `upArgs`: more arguments of `fleet up` (`--mcp-config <file>`). */
export async function startFleetStack(env: NodeJS.ProcessEnv = {}, upArgs: string[] = []): Promise<FleetStack> {
  const dir = mkdtempSync(join(tmpdir(), "fleet-e2e-"));
  const home = join(dir, ".fleet");
  const workspace = join(dir, "workspace");
  mkdirSync(workspace, { recursive: true });
  const stackEnv = {
    FLEET_HOME: home,
    FLEET_PARTITIONS: "4",
    FLEET_COALESCE_MS: "10",
    // Stacks of parallel test files must not race for the gateway's default port.
    FLEET_GATEWAY_PORT: String(await getFreePort()),
    ...env,
    FLEET_WORKSPACE: workspace,
  };
  const up = spawnCli(["up", ...upArgs], { cwd: dir, env: stackEnv });
  const finished = collect(up, 600_000);
  let banner: string;
  try {
    banner = await waitForOutput(up, /ready: \d+\/\d+ loop leases/, 90_000);
  } catch (error) {
    up.kill("SIGKILL");
    await finished;
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const natsUrl = (JSON.parse(readFileSync(join(home, "stack.json"), "utf8")) as { natsUrl: string }).natsUrl;
  const cliEnv = { FLEET_HOME: home };
  return {
    dir,
    home,
    workspace,
    natsUrl,
    up,
    banner,
    env: cliEnv,
    fleet: (args, timeoutMs) => runCli(args, { cwd: dir, env: cliEnv, timeoutMs: timeoutMs ?? 60_000 }),
    stop: async () => {
      up.kill("SIGTERM");
      const result = await finished;
      rmSync(dir, { recursive: true, force: true });
      return result;
    },
  };
}

/**
 * Runs `fleet prompt --json` in `session` until agent_end and returns its NDJSON items; throws
 * when the command fails or writes to stderr.
 */
export async function promptJson<T>(stack: FleetStack, session: string, text: string): Promise<T[]> {
  const result = await stack.fleet(["prompt", "--json", "-s", session, text], 120_000);
  if (result.code !== 0 || result.stderr !== "") {
    throw new Error(`fleet prompt exited ${result.code}: ${result.stderr}`);
  }
  return result.stdout
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line) as T);
}
