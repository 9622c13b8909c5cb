// A service that starts while nats-server does not answer waits for JetStream instead of exiting.
import { type NatsServer, startNats } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkServer, connectNats } from "./nats-connection.js";

let server: NatsServer;
beforeAll(async () => {
  server = await startNats();
});
afterAll(async () => {
  if (server?.pid) process.kill(server.pid, "SIGCONT");
  await server?.stop();
});

describe("checkServer", () => {
  it("with waitMs, asks JetStream again through a 12 s pause of nats-server and then passes", async () => {
    const nc = await connectNats({ url: server.url, name: "check-wait" });
    const pid = server.pid as number;
    const retries: string[] = [];
    try {
      process.kill(pid, "SIGSTOP");
      const resume = setTimeout(() => process.kill(pid, "SIGCONT"), 12_000);
      const started = Date.now();
      const without = await checkServer(nc);
      expect(without.ok).toBe(false);
      const waited = await checkServer(nc, { waitMs: 30_000, retryMs: 200, onRetry: (e) => retries.push(e) });
      clearTimeout(resume);
      expect(waited.ok).toBe(true);
      expect(retries.length).toBeGreaterThan(0);
      expect(retries[0]).toMatch(/JetStream is not available/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(12_000);
    } finally {
      process.kill(pid, "SIGCONT");
      await nc.close();
    }
  }, 40_000);
});
