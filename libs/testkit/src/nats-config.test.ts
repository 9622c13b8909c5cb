import { describe, expect, it } from "vitest";
import { buildNatsConfig } from "./nats-config.js";

describe("testkit / buildNatsConfig", () => {
  it("renders a single JetStream server with limits, max_payload and monitor", () => {
    expect(
      buildNatsConfig({
        host: "127.0.0.1",
        port: 14222,
        storeDir: "/tmp/a b/store",
        maxPayload: 2097152,
        monitorPort: 18222,
        jetstream: { maxMemoryStore: 1024, maxFileStore: 4096 },
      }),
    ).toBe(
      [
        'listen: "127.0.0.1:14222"',
        "max_payload: 2097152",
        'http: "127.0.0.1:18222"',
        "jetstream {",
        '  store_dir: "/tmp/a b/store"',
        "  max_memory_store: 1024",
        "  max_file_store: 4096",
        "}",
        "",
      ].join("\n"),
    );
  });

  it("renders a cluster node with server_name and routes to the other nodes", () => {
    expect(
      buildNatsConfig({
        host: "127.0.0.1",
        port: 1,
        storeDir: "/s",
        serverName: "n0",
        cluster: { name: "fleet-test", port: 2, routes: ["nats-route://127.0.0.1:4", "nats-route://127.0.0.1:6"] },
      }),
    ).toBe(
      [
        'server_name: "n0"',
        'listen: "127.0.0.1:1"',
        "jetstream {",
        '  store_dir: "/s"',
        "}",
        "cluster {",
        '  name: "fleet-test"',
        '  listen: "127.0.0.1:2"',
        '  routes: ["nats-route://127.0.0.1:4", "nats-route://127.0.0.1:6"]',
        "}",
        "",
      ].join("\n"),
    );
  });
});
