import { connect } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { listRunningServers } from "./cleanup-registry.js";
import { isPidAlive } from "./process-alive.js";
import { sendRedisCommand } from "./redis-command.js";
import { useFakeAnthropic, useNats, useRedis } from "./vitest.js";

const seenPids: number[] = [];

describe("testkit / vitest hooks", () => {
  const nats = useNats();
  const redis = useRedis();
  const fake = useFakeAnthropic();

  it("start the servers in beforeAll", async () => {
    const nc = await connect({ servers: nats().url });
    expect(nc.info?.jetstream).toBe(true);
    await nc.close();
    expect(await sendRedisCommand(redis().port, ["PING"])).toBe("PONG");
    expect(fake().url).toBe(`http://127.0.0.1:${fake().port}`);
    seenPids.push(nats().pid!, redis().pid!);
  });
});

describe("testkit / vitest hooks lifetime", () => {
  const nats = useNats();
  const atCollection = (() => {
    try {
      return nats().url;
    } catch (error) {
      return (error as Error).message;
    }
  })();
  it("are unavailable at collection time and available inside tests", () => {
    expect(atCollection).toBe("useNats() is only available inside tests (between beforeAll and afterAll)");
    expect(nats().port).toBeGreaterThan(0);
  });
  afterAll(() => {
    // afterAll hooks run in reverse order of registration: this one runs before useNats' stop().
    expect(nats().port).toBeGreaterThan(0);
  });
});

afterAll(() => {
  expect(seenPids).toHaveLength(2);
  expect(seenPids.filter(isPidAlive)).toEqual([]);
  expect(listRunningServers()).toEqual([]);
});
