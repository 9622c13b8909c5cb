import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { listRunningServers } from "./cleanup-registry.js";
import { type NatsServer, startNats } from "./nats-server.js";
import { isPidAlive } from "./process-alive.js";

async function waitForStatus(nc: NatsConnection, type: string): Promise<void> {
  for await (const status of nc.status()) if (status.type === type) return;
}

const started: NatsServer[] = [];
const start = async (opts?: Parameters<typeof startNats>[0]): Promise<NatsServer> => {
  const server = await startNats(opts);
  started.push(server);
  return server;
};

afterAll(async () => {
  await Promise.all(started.map((s) => s.stop()));
});

describe("testkit / startNats", () => {
  it("starts a JetStream server on a free loopback port with a fresh store dir, and stop() kills it", async () => {
    const server = await start();
    expect(server.url).toBe(`nats://127.0.0.1:${server.port}`);
    expect(server.port).not.toBe(4222);
    expect(server.backend).toBe("process");
    expect(server.dataDir.startsWith(tmpdir())).toBe(true);
    expect(existsSync(server.dataDir)).toBe(true);
    const pid = server.pid!;
    expect(isPidAlive(pid)).toBe(true);
    expect(server.output()).toContain("Server is ready");

    const nc = await connect({ servers: server.url });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "T", subjects: ["t.>"], storage: StorageType.File });
    const ack = await jetstream(nc).publish("t.a", "hello");
    expect(ack).toMatchObject({ stream: "T", seq: 1, duplicate: false });
    expect((await jsm.streams.info("T")).state.messages).toBe(1);
    expect(existsSync(`${server.dataDir}/jetstream`)).toBe(true);
    await nc.close();

    await server.stop();
    expect(isPidAlive(pid)).toBe(false);
    expect(existsSync(server.dataDir)).toBe(false);
    expect(listRunningServers()).not.toContain(`nats-server :${server.port} pid ${pid}`);
    await server.stop(); // idempotent
  });

  it("restart() keeps the port and the JetStream data, and a reconnecting client resumes", async () => {
    const server = await start();
    const nc = await connect({ servers: server.url, reconnectTimeWait: 50, maxReconnectAttempts: -1 });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "R", subjects: ["r.>"], storage: StorageType.File });
    const js = jetstream(nc);
    for (const n of [1, 2, 3]) await js.publish(`r.${n}`, `m${n}`);
    const firstPid = server.pid!;
    const reconnected = waitForStatus(nc, "reconnect");

    await server.restart();

    expect(isPidAlive(firstPid)).toBe(false);
    expect(server.pid).not.toBe(firstPid);
    expect(isPidAlive(server.pid!)).toBe(true);
    expect(server.url).toBe(`nats://127.0.0.1:${server.port}`);
    // nats.js 3.4 loses a request issued while it is still disconnected, so wait for the reconnect.
    await reconnected;
    const ack = await js.publish("r.4", "m4", { timeout: 5000 });
    expect(ack.seq).toBe(4);
    const info = await jsm.streams.info("R");
    expect(info.state.messages).toBe(4);
    expect((await jsm.streams.getMessage("R", { seq: 2 }))?.string()).toBe("m2");
    await nc.close();
  });

  it("applies max_payload and the JetStream store limits", async () => {
    const server = await start({
      maxPayload: 2 * 1024 * 1024,
      jetstream: { maxMemoryStore: 64 * 1024 * 1024, maxFileStore: 256 * 1024 * 1024 },
      monitor: true,
    });
    const nc = await connect({ servers: server.url });
    expect(nc.info?.max_payload).toBe(2 * 1024 * 1024);
    await nc.close();
    const jsz = (await (await fetch(`${server.monitorUrl}/jsz`)).json()) as { config: Record<string, unknown> };
    expect(jsz.config).toMatchObject({ max_memory: 64 * 1024 * 1024, max_storage: 256 * 1024 * 1024 });
  });

  it("passes extra args to nats-server", async () => {
    const server = await start({ args: ["--server_name", "extra-args-node"] });
    const nc = await connect({ servers: server.url });
    expect(nc.info?.server_name).toBe("extra-args-node");
    await nc.close();
  });

  it("refuses the system server's port 4222", async () => {
    await expect(startNats({ port: 4222 })).rejects.toThrow(
      "startNats: port 4222 belongs to the system nats-server; omit `port`",
    );
  });

  it("leaves no server running after stop()", async () => {
    const pids = started.map((s) => s.pid!);
    await Promise.all(started.map((s) => s.stop()));
    expect(pids.filter(isPidAlive)).toEqual([]);
    expect(listRunningServers()).toEqual([]);
  });
});
