// `fleet up --secure`: operator mode generated into FLEET_SECURE_DIR, a loop, runner and store per
// demo tenant (acme, globex) each under its own creds, one gateway for both with bearer tokens; the
// scripted demo runs through HTTP in each tenant's own account, and a second start reuses the files.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isPidAlive } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../gateway/support.js";
import { collect, runCli, spawnCli, stopClis, waitForOutput } from "./support/run-cli.js";
import { secureUpEnv } from "./support/secure-up-env.js";

interface TokensFile {
  tokens: { token: string; tenant: string; role: "read" | "operate" }[];
  tenants: Record<string, { natsCreds: string }>;
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "fleet-up-secure-"));
});
// A failed test leaves its \`fleet up\` running: it stops here with its servers, before their files go.
afterAll(async () => {
  await stopClis();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe("fleet up --secure", () => {
  it("runs both demo tenants on generated creds behind one gateway with tokens, and stops cleanly", async () => {
    const { home, secureDir, port, env } = await secureUpEnv(dir, { FLEET_PARTITIONS: "4" });
    const up = spawnCli(["up", "--secure"], { cwd: dir, env });
    const finished = collect(up, 180_000);
    const bothReady = waitForOutput(
      up,
      /ready \(acme\)[\s\S]*ready \(globex\)|ready \(globex\)[\s\S]*ready \(acme\)/,
      150_000,
    );
    const banner = await waitForOutput(up, /Ctrl-C stops everything/, 90_000);
    const tokensPath = join(secureDir, "tokens.json");
    const base = `http://127.0.0.1:${port}`;
    expect(banner).toContain(`  gateway  ${base}  (bearer tokens; /openapi.json)`);
    expect(banner).toContain(`  tokens   ${tokensPath}`);
    expect(banner).toContain("generated now: operator mode, accounts acme, globex");
    for (const line of ["loop-acme", "tools-globex", "store-globex"]) expect(banner).toContain(line);
    expect(statSync(tokensPath).mode & 0o077).toBe(0);
    const tokens = JSON.parse(readFileSync(tokensPath, "utf8")) as TokensFile;
    expect(tokens.tokens.map((t) => `${t.tenant}:${t.role}`)).toEqual([
      "acme:read",
      "acme:operate",
      "globex:read",
      "globex:operate",
    ]);
    expect(tokens.tenants.acme?.natsCreds).toBe(join(secureDir, "creds", "acme-gateway.creds"));
    const tokenOf = (tenant: string, role: string) =>
      tokens.tokens.find((t) => t.tenant === tenant && t.role === role)?.token ?? "";

    await bothReady;
    await expect.poll(async () => (await fetch(`${base}/readyz`)).status, { timeout: 30_000 }).toBe(200);

    // The scripted demo, through HTTP, as each tenant.
    for (const tenant of ["acme", "globex"]) {
      const created = await call(base, "POST", "/v1/sessions", {
        token: tokenOf(tenant, "operate"),
        body: { sessionId: `s-${tenant}` },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const sent = await call(base, "POST", `/v1/sessions/s-${tenant}/commands`, {
        token: tokenOf(tenant, "operate"),
        body: { type: "prompt", text: "what is here?" },
      });
      expect(sent.body.event.type).toBe("command_accepted");
    }
    for (const tenant of ["acme", "globex"]) {
      await expect
        .poll(
          async () => {
            const state = await call(base, "GET", `/v1/sessions/s-${tenant}`, { token: tokenOf(tenant, "read") });
            return state.body.status === "idle" && state.body.messages.length > 2;
          },
          { timeout: 60_000 },
        )
        .toBe(true);
      const list = await call(base, "GET", "/v1/sessions", { token: tokenOf(tenant, "read") });
      expect(list.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual([`s-${tenant}`]);
    }
    const across = await call(base, "GET", "/v1/sessions/s-acme", { token: tokenOf("globex", "read") });
    expect([across.status, across.body.error.code]).toEqual([404, "not_found"]);
    expect((await call(base, "GET", "/v1/sessions")).status).toBe(401);

    // The CLI: anonymous is refused with a hint; a tenant's operator creds work.
    const anonymous = await runCli(["sessions"], { cwd: dir, env: { FLEET_HOME: home } });
    expect(anonymous.stderr).toMatch(/refused the login of anonymous.*NATS_CREDS=.*acme-operator\.creds/);
    const asAcme = await runCli(["sessions"], {
      cwd: dir,
      env: { FLEET_HOME: home, NATS_CREDS: join(secureDir, "creds", "acme-operator.creds") },
    });
    expect(asAcme.stdout).toContain("s-acme");
    expect(asAcme.stdout).not.toContain("s-globex");

    const stack = JSON.parse(readFileSync(join(home, "stack.json"), "utf8")) as {
      services: { name: string; pid: number | null }[];
    };
    expect(stack.services.map((s) => s.name)).toEqual([
      "nats-server",
      "redis-server",
      ...["acme", "globex"].flatMap((t) => [`store-${t}`, `tools-${t}`, `loop-${t}`]),
      "gateway",
    ]);
    for (const name of stack.services.map((s) => s.name).filter((n) => !n.endsWith("-server"))) {
      expect(readFileSync(join(home, "logs", `${name}.log`), "utf8"), name).not.toContain("nats_permission_denied");
    }

    up.kill("SIGTERM");
    const result = await finished;
    expect([result.code, result.signal]).toEqual([0, null]);
    expect(stack.services.filter((s) => s.pid !== null && isPidAlive(s.pid))).toEqual([]);
    expect(existsSync(join(home, "stack.json"))).toBe(false);

    // A second start keeps the generated files (and so the accounts' data).
    const again = spawnCli(["up", "--secure"], { cwd: dir, env });
    const second = collect(again, 120_000);
    const banner2 = await waitForOutput(again, /Ctrl-C stops everything/, 90_000);
    expect(banner2).toContain("kept from an earlier run");
    expect(JSON.parse(readFileSync(tokensPath, "utf8"))).toEqual(tokens);
    await expect
      .poll(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status, { timeout: 60_000 })
      .toBe(200);
    const kept = await call(base, "GET", "/v1/sessions", { token: tokenOf("acme", "read") });
    expect(kept.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(["s-acme"]);
    again.kill("SIGTERM");
    expect((await second).code).toBe(0);
  }, 300_000);
});
