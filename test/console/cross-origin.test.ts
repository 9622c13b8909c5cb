// Browsers on other origins: a page of an allowed origin calls the API (CORS) and streams a
// session with EventSource and a stream ticket; a page of another origin is refused; the web
// console, served from another origin, talks to the gateway with the same mechanisms (history by
// fetch, live events by ticket, images by reference, webhooks). Real Chromium, real stack.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join } from "node:path";
import { tokenTable, webOptionsOf } from "@fleet/gateway";
import { bytesToBase64 } from "@fleet/protocol";
import { fakeReply, fakeText } from "@fleet/testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type GatewayStack, startGatewayStack } from "../gateway/support.js";
import { buildConsole, launchChromium, ROOT } from "./browser.js";

const TOKEN = "acme-operate-token-0123456789";
const READ = "acme-read-token-0123456789ab";
let stack: GatewayStack;
let browser: Browser;
const servers: Server[] = [];
let allowed = "";
let consoleOrigin = "";
let foreign = "";
let gateway = "";

const TYPES: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css" };

/** A static site: `files` by path, else the console's build with its index.html for every other path. */
async function site(files: Record<string, string> = {}, dist?: string): Promise<string> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] as string;
    if (files[path] !== undefined) return void res.writeHead(200, { "content-type": "text/html" }).end(files[path]);
    if (!dist) return void res.writeHead(404).end();
    let body: Buffer;
    let file = path;
    try {
      body = readFileSync(join(dist, path));
    } catch {
      file = "/index.html";
      body = readFileSync(join(dist, "index.html"));
    }
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const PAGE = "<!doctype html><title>another app</title><p>another app</p>";

beforeAll(async () => {
  buildConsole();
  allowed = await site({ "/": PAGE });
  foreign = await site({ "/": PAGE });
  consoleOrigin = await site({}, join(ROOT, "services/console/dist"));
  stack = await startGatewayStack({
    gateway: {
      tokens: tokenTable({
        tokens: [
          { token: TOKEN, tenant: "acme", role: "operate" },
          { token: READ, tenant: "acme", role: "read" },
        ],
        tenants: {},
      }),
      // The stack's server has no accounts: tenant acme's identity is the gateway's own login.
      tenant: "acme",
      web: { ...webOptionsOf(), webhookAllowance: { kind: "all" }, corsOrigins: [allowed, consoleOrigin] },
    },
  });
  gateway = stack.gateway.url;
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await stack?.stop();
  for (const s of servers) await new Promise((r) => s.close(r));
});

async function open(origin: string): Promise<Page> {
  const page = await browser.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${origin}/`);
  return page;
}

/** Runs a prompt to its end through the SDK. */
async function prompt(sessionId: string, text: string, reply: string) {
  stack.fake.script(fakeReply(reply, { eventDelayMs: 30 }));
  await stack.client.prompt(sessionId, text);
  const live = await stack.client.state(sessionId);
  await live.waitFor((v) => !v.agent.isStreaming && v.agent.messages.at(-1)?.role === "assistant", 30_000);
  live.close();
}

describe("browsers on other origins", () => {
  it("a page of an allowed origin calls the API with its token and streams events with a ticket", async () => {
    await prompt("s-cors", "first", "first answer");
    const page = await open(allowed);
    const result = await page.evaluate(
      async ({ gateway, token }) => {
        const headers = { authorization: `Bearer ${token}` };
        const sessions = await (await fetch(`${gateway}/v1/sessions`, { headers })).json();
        const ticket = await (
          await fetch(`${gateway}/v1/sessions/s-cors/events/ticket`, { method: "POST", headers })
        ).json();
        const types: string[] = [];
        const ids: string[] = [];
        await new Promise<void>((resolve, reject) => {
          const source = new EventSource(`${gateway}${ticket.url}&after=0`);
          const timer = setTimeout(() => reject(new Error(`timeout after ${types.join(",")}`)), 10_000);
          for (const type of ["session_created", "command_accepted", "message_end", "agent_end"]) {
            source.addEventListener(type, (e) => {
              types.push(type);
              ids.push((e as MessageEvent).lastEventId);
              if (type === "agent_end") {
                clearTimeout(timer);
                source.close();
                resolve();
              }
            });
          }
        });
        // Without a ticket (no header either): refused, and EventSource gives up.
        const refused = await new Promise<number>((resolve) => {
          const source = new EventSource(`${gateway}/v1/sessions/s-cors/events`);
          source.onerror = () => {
            resolve(source.readyState);
            source.close();
          };
        });
        const wrong = await fetch(`${gateway}/v1/sessions/s-other/events?ticket=${encodeURIComponent(ticket.ticket)}`);
        return {
          listed: sessions.sessions.map((s: { sessionId: string }) => s.sessionId),
          types,
          ids,
          refused,
          wrong: [wrong.status, await wrong.json()],
          expiresIn: ticket.expiresAt - Date.now(),
        };
      },
      { gateway, token: TOKEN },
    );
    expect(result.listed).toContain("s-cors");
    expect(result.types).toEqual(["command_accepted", "session_created", "message_end", "message_end", "agent_end"]);
    expect(result.ids.map(Number)).toEqual([...result.ids.map(Number)].sort((a, b) => a - b));
    expect(result.refused).toBe(2); // EventSource.CLOSED
    expect(result.wrong).toEqual([
      401,
      { error: { code: "unauthorized", message: "the ticket is for another session" } },
    ]);
    expect(result.expiresIn).toBeGreaterThan(50_000);
    expect(result.expiresIn).toBeLessThanOrEqual(60_000);
    await page.close();
  });

  it("a page of another origin gets no answer it can read, and its EventSource fails even with a ticket", async () => {
    const ticket = (await call(gateway, "POST", "/v1/sessions/s-cors/events/ticket", { token: READ })).body;
    const page = await open(foreign);
    const result = await page.evaluate(
      async ({ gateway, token, url }) => {
        const fetched = await fetch(`${gateway}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } }).then(
          () => "read",
          (err: Error) => err.name,
        );
        const stream = await new Promise<string>((resolve) => {
          const source = new EventSource(`${gateway}${url}&follow=false`);
          source.addEventListener("session_created", () => resolve("received"));
          source.onerror = () => {
            source.close();
            resolve("error");
          };
        });
        return { fetched, stream };
      },
      { gateway, token: TOKEN, url: ticket.url },
    );
    expect(result).toEqual({ fetched: "TypeError", stream: "error" });
    // What the gateway answered: no CORS headers for that origin; a preflight of it is an unknown route.
    const preflight = await fetch(`${gateway}/v1/sessions`, {
      method: "OPTIONS",
      headers: {
        origin: foreign,
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization",
      },
    });
    expect([preflight.status, preflight.headers.get("access-control-allow-origin")]).toEqual([404, null]);
    const ok = await fetch(`${gateway}/v1/sessions`, {
      method: "OPTIONS",
      headers: {
        origin: allowed,
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization",
      },
    });
    expect([ok.status, ok.headers.get("access-control-allow-origin")]).toEqual([204, allowed]);
    expect(ok.headers.get("access-control-allow-headers")).toContain("authorization");
    await page.close();
  });

  it("tickets expire, and gateways sharing FLEET_GATEWAY_TICKET_KEY accept each other's", async () => {
    await stack.client.createSession({}, { sessionId: "s-ticket" });
    const shared = Buffer.from("k".repeat(32));
    const web = { ...webOptionsOf(), ticketKey: shared, ticketTtlMs: 1_000 };
    const tokens = tokenTable({ tokens: [{ token: READ, tenant: "acme", role: "read" }], tenants: {} });
    const a = await stack.startGateway({ tokens, web });
    const b = await stack.startGateway({ tokens, web });
    const c = await stack.startGateway({ tokens, web: { ...web, ticketKey: Buffer.from("z".repeat(32)) } });
    try {
      const issued = await call(a.url, "POST", "/v1/sessions/s-ticket/events/ticket", { token: READ });
      expect([issued.status, issued.body.error]).toEqual([201, undefined]);
      const { url } = issued.body;
      expect((await call(b.url, "GET", `${url}&follow=false`)).status).toBe(200);
      const other = await call(c.url, "GET", `${url}&follow=false`);
      expect([other.status, other.body.error.message]).toEqual([401, "the ticket's signature is not this gateway's"]);
      await new Promise((r) => setTimeout(r, 1_100));
      const late = await call(a.url, "GET", `${url}&follow=false`);
      expect([late.status, late.body.error.message]).toEqual([401, "the ticket has expired; ask for a new one"]);
    } finally {
      for (const g of [a, b, c]) await g.close();
    }
  });

  it("the web console, served from another origin, reads, streams, sends, shows images by reference and webhooks", async () => {
    // A session with an image by reference, and a webhook that is disabled after its failures.
    const image = readFileSync(join(ROOT, "docs/screenshots/session.png"));
    stack.fake.script(fakeReply("a screenshot"));
    await stack.client.prompt("s-console-x", {
      text: "what is this?",
      images: [{ type: "image", data: bytesToBase64(image), mimeType: "image/png" }],
    });
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.setDefaultTimeout(15_000);
    const requests: string[] = [];
    page.on("request", (r) => requests.push(`${r.method()} ${r.url()}`));
    await page.addInitScript(
      ({ gateway, token }) => {
        localStorage.setItem("fleet.gateway", gateway);
        localStorage.setItem("fleet.token", token);
      },
      { gateway, token: TOKEN },
    );
    await page.goto(`${consoleOrigin}/sessions/s-console-x`);
    await page.getByTestId("session").waitFor();
    await expect.poll(() => page.getByTestId("transcript").textContent()).toContain("a screenshot");
    // The image came through the gateway's blob route, across origins.
    const img = page.getByTestId("content-image").first();
    await expect.poll(() => img.evaluate((el) => (el as HTMLImageElement).naturalWidth)).toBeGreaterThan(0);
    expect(
      requests.some((r) => r.startsWith(`GET ${gateway}/v1/sessions/s-console-x/blob?name=input%2Fs-console-x%2F`)),
    ).toBe(true);

    // A prompt sent from the console streams back over EventSource with a ticket.
    stack.fake.script(
      fakeReply([fakeText("streamed across origins", ["streamed ", "across ", "origins"])], { eventDelayMs: 100 }),
    );
    await page.getByTestId("input").fill("say something");
    await page.getByTestId("send-prompt").click();
    await expect
      .poll(() => page.getByTestId("transcript").textContent(), { timeout: 20_000 })
      .toContain("streamed across origins");
    expect(requests).toContain(`POST ${gateway}/v1/sessions/s-console-x/events/ticket`);
    expect(requests.some((r) => r.startsWith(`GET ${gateway}/v1/sessions/s-console-x/events?ticket=`))).toBe(true);
    expect(requests).toContain(`POST ${gateway}/v1/sessions/s-console-x/commands`);

    // The webhooks page: a webhook whose receiver fails is shown disabled, with its failures.
    const hook = await call(gateway, "POST", "/v1/webhooks", {
      token: TOKEN,
      body: { url: "http://127.0.0.1:9/refused", events: ["*"], sessionId: "s-console-x" },
    });
    expect(hook.status).toBe(201);
    await stack.client.setName("s-console-x", "with a webhook");
    await page.goto(`${consoleOrigin}/webhooks`);
    const row = page.getByTestId("webhook");
    await expect.poll(() => row.getAttribute("data-state"), { timeout: 30_000 }).toBe("disabled");
    expect(await page.getByTestId("webhook-disabled").textContent()).toMatch(
      /20 failed attempts in a row; the last: connect ECONNREFUSED 127\.0\.0\.1:9/,
    );
    expect(await page.getByTestId("webhook-failures").locator("tr[data-outcome=error]").count()).toBe(20);
    await page.screenshot({ path: join(ROOT, "docs/screenshots/webhooks.png") });
    await page.getByTestId("webhook-enable").click();
    await expect.poll(() => row.getAttribute("data-state")).toBe("active");
    await call(gateway, "DELETE", `/v1/webhooks/${hook.body.id}`, { token: TOKEN });
    await page.close();
  }, 90_000);
});
