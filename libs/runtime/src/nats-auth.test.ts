import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nkeys } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { buildNatsAuth, describeNatsAuth, natsAuthFromEnv, redactUrl } from "./nats-auth.js";

const dir = mkdtempSync(join(tmpdir(), "fleet-auth-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const b64url = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");

describe("nats auth / settings", () => {
  it("reads the NATS_* variables, empty ones as unset", () => {
    expect(
      natsAuthFromEnv({ NATS_USER: "loop", NATS_PASSWORD: "pw", NATS_TOKEN: "", NATS_TLS_CA: "/ca.pem", OTHER: "x" }),
    ).toEqual({ user: "loop", password: "pw", tlsCa: "/ca.pem" });
  });

  it("builds an anonymous login from nothing", () => {
    const built = buildNatsAuth({});
    expect(built.ok && built.auth).toEqual({ options: {}, identity: "anonymous" });
  });

  it("names the user of a password login, never the password", () => {
    const built = buildNatsAuth({ user: "acme-loop", password: "s3cret" });
    expect(built.ok && built.auth.identity).toBe('user "acme-loop"');
    expect(built.ok && typeof built.auth.options.authenticator).toBe("function");
  });

  it("reads an nkey seed file and names its public key", () => {
    const kp = nkeys.createUser();
    const seed = file("user.nk", `${new TextDecoder().decode(kp.getSeed())}\n`);
    const built = buildNatsAuth({ nkey: seed });
    expect(built.ok && built.auth.identity).toBe(`nkey ${kp.getPublicKey()}`);
  });

  it("reads a creds file and names its JWT's user", () => {
    const kp = nkeys.createUser();
    const jwt = `${b64url({ alg: "ed25519-nkey" })}.${b64url({ name: "acme-tools", sub: kp.getPublicKey() })}.sig`;
    const creds = file(
      "user.creds",
      `-----BEGIN NATS USER JWT-----\n${jwt}\n------END NATS USER JWT------\n\n` +
        `-----BEGIN USER NKEY SEED-----\n${new TextDecoder().decode(kp.getSeed())}\n------END USER NKEY SEED------\n`,
    );
    const built = buildNatsAuth({ creds });
    expect(built.ok && built.auth.identity).toBe(`creds user "acme-tools" (${kp.getPublicKey()})`);
  });

  it("passes TLS files as paths, with the client certificate in the identity", () => {
    const ca = file("ca.pem", "ca");
    const cert = file("cert.pem", "cert");
    const key = file("key.pem", "key");
    const built = buildNatsAuth({ token: "t", tlsCa: ca, tlsCert: cert, tlsKey: key });
    expect(built.ok && built.auth.options.tls).toEqual({ caFile: ca, certFile: cert, keyFile: key });
    expect(built.ok && built.auth.identity).toBe("token with TLS client certificate");
  });

  it.each([
    [{ user: "a", password: "b", token: "c" }, "set only one of NATS_USER, NATS_TOKEN: each is a complete login"],
    [{ user: "a" }, "NATS_USER is set without NATS_PASSWORD"],
    [{ password: "b" }, "NATS_PASSWORD is set without NATS_USER"],
    [{ tlsCert: "/c.pem" }, "NATS_TLS_CERT and NATS_TLS_KEY go together (a client certificate and its key)"],
    [{ nkey: "/nonexistent/seed" }, "NATS_NKEY: cannot read /nonexistent/seed (ENOENT)"],
  ])("refuses %j with one clear line", (settings, error) => {
    expect(buildNatsAuth(settings)).toEqual({ ok: false, error });
  });

  it("refuses a file that holds no seed, without printing it", () => {
    const bad = file("bad.nk", "not-a-seed-SECRET");
    const built = buildNatsAuth({ nkey: bad });
    expect(built).toEqual({ ok: false, error: `NATS_NKEY ${bad} does not hold an nkey seed` });
  });

  it("describes a login without its secrets", () => {
    const text = describeNatsAuth({ user: "acme-reader", password: "pw-SECRET", tlsCa: "/ca.pem" });
    expect(text).toBe('user "acme-reader" with a password, CA /ca.pem');
    expect(describeNatsAuth({ token: "tok-SECRET" })).toBe("a token");
  });

  it("redacts credentials in URLs", () => {
    expect(redactUrl("nats://loop:pw@h1:4222,nats://tok@h2:4222,nats://h3")).toBe(
      "nats://loop:***@h1:4222,nats://***@h2:4222,nats://h3",
    );
  });
});
