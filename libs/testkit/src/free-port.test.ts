import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { describe, expect, it, vi } from "vitest";
import { getFreePort } from "./free-port.js";

const ephemeralLow = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);

describe("getFreePort", () => {
  it("hands out ports below the ephemeral range that the caller can bind", async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => getFreePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(ephemeralLow);
    }
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: "127.0.0.1", port: ports[0], exclusive: true }, resolve);
    });
    await new Promise((r) => server.close(r));
  });

  it("draws again when the port it drew is being listened on", async () => {
    const server = createServer();
    const taken = await getFreePort();
    await new Promise<void>((resolve) => server.listen({ host: "127.0.0.1", port: taken }, resolve));
    // The first draw is the taken port, the second one found free a moment ago (never the taken
    // one: it is listened on, and getFreePort binds what it hands out).
    const free = await getFreePort();
    const span = ephemeralLow - 10_000;
    const draws = [(taken - 10_000 + 0.5) / span, (free - 10_000 + 0.5) / span];
    const random = vi.spyOn(Math, "random").mockImplementation(() => draws.shift() ?? 0.5);
    try {
      expect(await getFreePort()).toBe(free);
      expect(random).toHaveBeenCalledTimes(2);
    } finally {
      random.mockRestore();
      await new Promise((r) => server.close(r));
    }
  });
});
