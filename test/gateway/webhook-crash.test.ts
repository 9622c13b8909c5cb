// A gateway process SIGKILLed in the middle of a webhook POST: the event is delivered by the next
// gateway, with the same body, signature and Idempotency-Key. Real nats-server, a real gateway
// process (the service's entry point), a real receiver.
import { startGateway, verifySignature } from "@fleet/gateway";
import { applyTopology, connectNats } from "@fleet/runtime";
import { getFreePort, type NatsServer, startNats } from "@fleet/testkit";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServiceProcess, spawnService } from "../support/service-process.js";
import { call, gatewayOptions, PARTITIONS } from "./support.js";
import { publishEvents, type Receiver, startReceiver } from "./webhook-receivers.js";

let nats: NatsServer;
let nc: NatsConnection;

beforeAll(async () => {
  nats = await startNats();
  nc = await connectNats({ url: nats.url, name: "webhook-crash" });
  await applyTopology(nc, { partitions: PARTITIONS, leaseTtlMs: 2_000 });
}, 60_000);

afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

describe("gateway / webhook delivery across a gateway crash", () => {
  it("delivers the event a SIGKILLed gateway was POSTing, with the same Idempotency-Key", async () => {
    let release: () => void = () => undefined;
    const firstArrived = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The first request is held open (the gateway dies while waiting); later ones get 200.
    const receiver: Receiver = await startReceiver("127.0.0.1", (_req, res) => {
      if (receiver.requests.length === 1) {
        release();
        return;
      }
      res.writeHead(200).end();
    });
    const port = await getFreePort();
    const proc: ServiceProcess = spawnService("gateway", {
      NATS_URL: nats.url,
      FLEET_GATEWAY_PORT: String(port),
      FLEET_WEBHOOK_ALLOW_PRIVATE: "1",
      FLEET_GATEWAY_WEBHOOK_TIMEOUT_MS: "120000",
    });
    let second: Awaited<ReturnType<typeof startGateway>> | undefined;
    try {
      await proc.waitForLog();
      const base = `http://127.0.0.1:${port}`;
      await expect.poll(async () => (await call(base, "GET", "/readyz")).status, { timeout: 15_000 }).toBe(200);
      const sessionId = "s-crash";
      const registered = await call(base, "POST", "/v1/webhooks", {
        body: { url: `${receiver.base}/hook`, events: ["custom"], sessionId },
      });
      expect(registered.status).toBe(201);
      const [seq] = await publishEvents(jetstream(nc), PARTITIONS, sessionId, [{ type: "custom", data: "once" }]);

      await firstArrived;
      const killedAt = Date.now();
      proc.proc.kill("SIGKILL");
      await new Promise((r) => proc.proc.once("exit", r));

      second = await startGateway(gatewayOptions(nats.url));
      await second.ready;
      await expect.poll(() => receiver.requests.length, { timeout: 30_000 }).toBe(2);
      const redeliveredMs = Date.now() - killedAt;
      const [a, b] = receiver.requests as [(typeof receiver.requests)[0], (typeof receiver.requests)[0]];
      expect([a.seq, b.seq]).toEqual([seq, seq]);
      expect(b.headers["idempotency-key"]).toBe(String(seq));
      expect(a.headers["idempotency-key"]).toBe(b.headers["idempotency-key"]);
      expect(b.body).toBe(a.body);
      expect(b.headers["fleet-signature"]).toBe(a.headers["fleet-signature"]);
      expect(verifySignature(registered.body.secret, b.body, b.headers["fleet-signature"] as string)).toBe(true);
      // The dead gateway recorded nothing; the second one records its attempt as the second delivery.
      // Successes are recorded in batches, just after their ack.
      const detail = async () => (await call(second?.url ?? "", "GET", `/v1/webhooks/${registered.body.id}`)).body;
      await expect.poll(async () => (await detail()).status.delivered).toBe(1);
      expect((await detail()).status).toMatchObject({ delivered: 1, failed: 0 });
      expect((await detail()).status.lastDeliveries[0]).toMatchObject({ seq, attempt: 2, outcome: "ok" });
      // Within the consumer's ack wait (15 s) and a pull.
      expect(redeliveredMs).toBeLessThan(25_000);
      console.log(`webhook redelivered ${redeliveredMs} ms after the SIGKILL`);
      await call(second.url, "DELETE", `/v1/webhooks/${registered.body.id}`);
    } finally {
      await second?.close();
      await proc.stop();
      await receiver.close();
    }
  });
});
