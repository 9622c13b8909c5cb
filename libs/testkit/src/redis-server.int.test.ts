import { existsSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { listRunningServers } from "./cleanup-registry.js";
import { isPidAlive } from "./process-alive.js";
import { sendRedisCommand } from "./redis-command.js";
import { type RedisServer, startRedis } from "./redis-server.js";

let redis: RedisServer | undefined;

afterAll(async () => {
  await redis?.stop();
});

describe("testkit / startRedis", () => {
  it("starts redis-server on a free loopback port without persistence in its own dir", async () => {
    redis = await startRedis();
    expect(redis.url).toBe(`redis://127.0.0.1:${redis.port}`);
    expect(redis.port).not.toBe(6379);
    expect(isPidAlive(redis.pid!)).toBe(true);
    expect(await sendRedisCommand(redis.port, ["SET", "k", "v"])).toBe("OK");
    expect(await sendRedisCommand(redis.port, ["GET", "k"])).toBe("v");
    expect(await sendRedisCommand(redis.port, ["CONFIG", "GET", "save"])).toEqual(["save", ""]);
    expect(await sendRedisCommand(redis.port, ["CONFIG", "GET", "appendonly"])).toEqual(["appendonly", "no"]);
    expect(await sendRedisCommand(redis.port, ["CONFIG", "GET", "dir"])).toEqual(["dir", redis.dataDir]);
  });

  it("restart() keeps the port, starts a new process and (no persistence) an empty dataset", async () => {
    const r = redis!;
    const firstPid = r.pid!;
    await r.restart();
    expect(isPidAlive(firstPid)).toBe(false);
    expect(r.pid).not.toBe(firstPid);
    expect(await sendRedisCommand(r.port, ["GET", "k"])).toBe(null);
  });

  it("refuses the system server's port 6379", async () => {
    await expect(startRedis({ port: 6379 })).rejects.toThrow(
      "startRedis: port 6379 belongs to the system redis-server; omit `port`",
    );
  });

  it("stop() kills the process by PID and removes the dir; the port refuses connections", async () => {
    const r = redis!;
    const pid = r.pid!;
    await r.stop();
    expect(isPidAlive(pid)).toBe(false);
    expect(existsSync(r.dataDir)).toBe(false);
    await expect(sendRedisCommand(r.port, ["PING"])).rejects.toThrow(/ECONNREFUSED/);
    expect(listRunningServers()).toEqual([]);
  });
});
