// `.fleet/stack.json`: where a running `fleet up` listens, so the other commands can find it.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { z } from "zod";

export const StackFile = z.object({
  natsUrl: z.string(),
  redisUrl: z.string(),
  natsMonitorUrl: z.string().nullable(),
  /** PID of the `fleet up` process. */
  pid: z.number().int(),
  startedAt: z.number().int(),
  workspace: z.string(),
  dataDir: z.string(),
  /** `anthropic`, `scripted`, or a pi-ai / FLEET_MODELS provider. */
  provider: z.string().min(1),
  /** `http://<host>:<port>` of the HTTP gateway, when `fleet up` started one. */
  gatewayUrl: z.string().nullable().optional(),
  /** `fleet up --secure`: the gateway's tokens file and the folder of the creds files. */
  secure: z.object({ dir: z.string(), tokensFile: z.string() }).nullable().optional(),
  services: z.array(z.object({ name: z.string(), pid: z.number().int().nullable(), opsUrl: z.string().nullable() })),
});
export type StackFile = z.infer<typeof StackFile>;

export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";
export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";

/** The `.fleet` dir `fleet up` uses: `$FLEET_HOME`, else `<cwd>/.fleet`. */
export function fleetHome(env: NodeJS.ProcessEnv, cwd: string): string {
  return env.FLEET_HOME ? resolve(cwd, env.FLEET_HOME) : join(cwd, ".fleet");
}

/**
 * The stack file of a live `fleet up`: `$FLEET_HOME/stack.json`, else the nearest `.fleet/stack.json`
 * in `cwd` or its parents. A file whose `fleet up` process is gone is ignored.
 */
export function findStack(env: NodeJS.ProcessEnv, cwd: string): { path: string; stack: StackFile } | undefined {
  const candidates: string[] = [];
  if (env.FLEET_HOME) candidates.push(join(resolve(cwd, env.FLEET_HOME), "stack.json"));
  else {
    for (let dir = resolve(cwd); ; dir = dirname(dir)) {
      candidates.push(join(dir, ".fleet", "stack.json"));
      if (dirname(dir) === dir) break;
    }
  }
  for (const path of candidates) {
    if (!existsSync(path)) continue;
    try {
      const parsed = StackFile.safeParse(JSON.parse(readFileSync(path, "utf8")));
      if (parsed.success && isAlive(parsed.data.pid)) return { path, stack: parsed.data };
    } catch {
      // unreadable: ignore it like a stale file
    }
  }
  return undefined;
}

/** Where the other commands connect: NATS_URL, then a live stack file, then the default. */
export function resolveNatsUrl(env: NodeJS.ProcessEnv, cwd: string): { url: string; source: string } {
  if (env.NATS_URL) return { url: env.NATS_URL, source: "NATS_URL" };
  const found = findStack(env, cwd);
  if (found) return { url: found.stack.natsUrl, source: found.path };
  return { url: DEFAULT_NATS_URL, source: "default" };
}

/** Same order for Redis (used by `fleet doctor`). */
export function resolveRedisUrl(env: NodeJS.ProcessEnv, cwd: string): { url: string; source: string } {
  if (env.REDIS_URL) return { url: env.REDIS_URL, source: "REDIS_URL" };
  const found = findStack(env, cwd);
  if (found) return { url: found.stack.redisUrl, source: found.path };
  return { url: DEFAULT_REDIS_URL, source: "default" };
}

/** Writes atomically (temp file + rename). */
export function writeStack(path: string, stack: StackFile): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(stack, null, 2)}\n`);
  renameSync(tmp, path);
}

export function removeStack(path: string): void {
  rmSync(path, { force: true });
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
