import { describe, expect, it } from "vitest";
import {
  accountClaimsOf,
  operatorModeProblem,
  renderOperatorConf,
  sizeInBytes,
  userClaimsOf,
} from "./nats-operator.js";
import { rolePermissions } from "./permissions.js";

const LIMITS = { maxMemory: "256MB", maxFile: "1GB", maxStreams: 16, maxConsumers: 256 };

describe("nats operator mode / claims", () => {
  it("reads nats-server sizes", () => {
    expect([sizeInBytes("512"), sizeInBytes("4K"), sizeInBytes("256MB"), sizeInBytes("1GB")]).toEqual([
      512,
      4096,
      256 * 1024 ** 2,
      1024 ** 3,
    ]);
    expect(() => sizeInBytes("lots")).toThrow(/not a nats-server size/);
  });

  it("gives an account its JetStream limits and a user its role's permissions", () => {
    expect(accountClaimsOf({ jetstream: LIMITS }).limits).toMatchObject({
      mem_storage: 256 * 1024 ** 2,
      disk_storage: 1024 ** 3,
      streams: 16,
      consumer: 256,
      conn: -1,
    });
    const store = rolePermissions("store", { partitions: 4 });
    expect(userClaimsOf(store)).toEqual({
      pub: { allow: store.publish.allow, deny: store.publish.deny },
      sub: { allow: store.subscribe.allow, deny: [] },
      resp: { max: 1, ttl: 0 },
    });
    expect(userClaimsOf(rolePermissions("reader", { partitions: 4 }))).not.toHaveProperty("resp");
  });

  it("refuses audit feeds, and renders the server's trust with a memory resolver", () => {
    const spec = { partitions: 4, tenants: [{ name: "acme", jetstream: LIMITS, audit: true }] };
    expect(operatorModeProblem(spec)).toMatch(/audit feeds .*acme/);
    expect(operatorModeProblem({ ...spec, tenants: [{ ...spec.tenants[0], audit: false }] } as typeof spec)).toBe(
      undefined,
    );
    const conf = renderOperatorConf({
      operatorJwt: "eyJo",
      systemAccount: "ASYS",
      accounts: [{ publicKey: "AX", jwt: "eyJa" }],
    });
    expect(conf).toContain(
      'operator: "eyJo"\nsystem_account: ASYS\nresolver: MEMORY\nresolver_preload: {\n  AX: "eyJa"\n}',
    );
  });
});
