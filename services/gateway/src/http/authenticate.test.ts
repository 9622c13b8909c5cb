import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { authenticate, isLoopback } from "./authenticate.js";
import { tokenTable } from "./tokens-file.js";

const tokens = tokenTable({
  tokens: [
    { token: "operate-token-0123456789", tenant: "acme", role: "operate" },
    { token: "read-token-0123456789abc", tenant: "beta", role: "read" },
  ],
  tenants: { beta: { natsCreds: "/etc/fleet/beta.creds" } },
});

describe("gateway / authenticate", () => {
  it("maps a known bearer token to its tenant and role", () => {
    // `tokenId` names the token in lifecycle records without revealing it: 12 hex digits of its SHA-256.
    expect(authenticate("Bearer operate-token-0123456789", "10.0.0.5", tokens, "operate")).toEqual({
      tenant: "acme",
      role: "operate",
      tokenId: createHash("sha256").update("operate-token-0123456789").digest("hex").slice(0, 12),
    });
    expect(authenticate("bearer read-token-0123456789abc", "10.0.0.5", tokens, "read")).toMatchObject({
      tenant: "beta",
      role: "read",
    });
    expect(tokens.loginOf("beta")).toEqual({ creds: "/etc/fleet/beta.creds" });
    expect(tokens.loginOf("acme")).toBeUndefined();
    expect(tokens.tenants()).toEqual(["acme", "beta"]);
  });

  it("answers 401 for a missing or unknown token and 403 for the read role on an operate route", () => {
    expect(authenticate(undefined, "127.0.0.1", tokens, "read")).toMatchObject({ status: 401, code: "unauthorized" });
    expect(authenticate("Basic abc", "127.0.0.1", tokens, "read")).toMatchObject({ status: 401 });
    expect(authenticate("Bearer nope-nope-nope-nope", "127.0.0.1", tokens, "read")).toMatchObject({ status: 401 });
    expect(authenticate("Bearer read-token-0123456789abc", "127.0.0.1", tokens, "operate")).toMatchObject({
      status: 403,
      code: "forbidden",
    });
  });

  it("without a tokens file accepts loopback clients only, as tenant local with the operate role", () => {
    expect(authenticate(undefined, "127.0.0.1", undefined, "operate")).toEqual({ tenant: "local", role: "operate" });
    expect(authenticate(undefined, "::ffff:127.0.0.1", undefined, "operate")).toEqual({
      tenant: "local",
      role: "operate",
    });
    expect(authenticate(undefined, "::1", undefined, "read")).toEqual({ tenant: "local", role: "operate" });
    expect(authenticate(undefined, "192.168.1.20", undefined, "read")).toMatchObject({ status: 403 });
    expect(authenticate(undefined, "192.168.1.20", undefined, "public")).toEqual({ tenant: "", role: "read" });
    expect([isLoopback("127.8.9.10"), isLoopback("10.127.0.1"), isLoopback(undefined)]).toEqual([true, false, false]);
  });
});
