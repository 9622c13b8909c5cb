import { describe, expect, it } from "vitest";
import { tokenTable } from "./http/tokens-file.js";
import { tenantIdentities } from "./tenant-identities.js";

const token = (n: number) => `token-${n}-0123456789abcdef`;
const own = { user: "acme-gateway", password: "secret" };

describe("gateway / tenant identities", () => {
  it("without a tokens file: tenant local on the gateway's own login", () => {
    expect(tenantIdentities({ tokens: undefined, ownTenant: undefined, ownLogin: own })).toEqual({
      ok: true,
      identities: [{ tenant: "local", login: own, source: "env" }],
    });
  });

  it("each tenant a token names: its tokens-file login, else the own login when it is FLEET_TENANT", () => {
    const tokens = tokenTable({
      tokens: [
        { token: token(1), tenant: "acme", role: "read" },
        { token: token(2), tenant: "globex", role: "operate" },
        { token: token(3), tenant: "globex", role: "read" },
      ],
      tenants: { globex: { natsCreds: "/s/globex-gateway.creds", natsTlsCa: "/s/ca.pem" }, unused: { natsToken: "t" } },
    });
    expect(tenantIdentities({ tokens, ownTenant: "acme", ownLogin: own })).toEqual({
      ok: true,
      identities: [
        { tenant: "acme", login: own, source: "env" },
        { tenant: "globex", login: { creds: "/s/globex-gateway.creds", tlsCa: "/s/ca.pem" }, source: "tokens-file" },
      ],
    });
    const refused = tenantIdentities({ tokens, ownTenant: undefined, ownLogin: own });
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.error).toMatch(/^tokens name tenant acme with no NATS identity of its own/);
  });
});
