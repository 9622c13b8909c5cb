// The gateway against hostile clients, over raw sockets, against the gateway process itself (its
// real entry point, `services/gateway/src/main.ts`): DNS rebinding and cross-origin writes in
// loopback mode, 401 before any body is read, deep, wide and long JSON, strict bodies, security
// headers, every error in the JSON shape, and memory after a flood of 2,000 SSE connections.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fakeReply, getFreePort } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServiceProcess, spawnService } from "../support/service-process.js";
import { httpRequest, openStreams, type RawAnswer, rawRequest } from "./raw-http.js";
import { type GatewayStack, startGatewayStack } from "./support.js";

const TOKEN = "operate-token-hostile-0123456789";
const SESSION = "s-hostile";
/** A session with a short log, for the SSE flood. */
const FLOOD_SESSION = "s-hostile-flood";
/** The longest error message the gateway sends (MAX_ERROR_MESSAGE_CHARS and the note of what was cut). */
const MAX_MESSAGE = 560;

let stack: GatewayStack;
let dir: string;
/** Loopback mode (no tokens file), `FLEET_GATEWAY_HOSTS=fleet.test`. */
let open: { proc: ServiceProcess; port: number };
/** With a tokens file. */
let tokened: { proc: ServiceProcess; port: number };

async function spawnGateway(env: Record<string, string>): Promise<{ proc: ServiceProcess; port: number }> {
  const port = await getFreePort();
  const proc = spawnService("gateway", { NATS_URL: stack.nats.url, FLEET_GATEWAY_PORT: String(port), ...env });
  await proc.waitForLog();
  // NATS connects in the background: /readyz says when.
  await proc.waitForLog("gateway_nats_connected");
  return { proc, port };
}

/** A request to the loopback-mode gateway. */
const send = (request: Buffer | string, opts?: Parameters<typeof rawRequest>[2]) =>
  rawRequest(open.port, request, opts);
const json = (answer: RawAnswer) => JSON.parse(answer.body);

/** The answer is `{error: {code, message}}` JSON, with a short message, and `nosniff`. */
function expectErrorShape(answer: RawAnswer, status: number, code?: string): void {
  expect([answer.status, answer.headers["content-type"]]).toEqual([status, "application/json; charset=utf-8"]);
  expect(answer.headers["x-content-type-options"]).toBe("nosniff");
  const body = json(answer);
  expect(Object.keys(body)).toEqual(["error"]);
  expect(body.error).toEqual({ code: code ?? expect.any(String), message: expect.any(String) });
  expect(body.error.message.length).toBeLessThanOrEqual(MAX_MESSAGE);
}

const command = (body: unknown, headers: Record<string, string> = {}) =>
  httpRequest("POST", `/v1/sessions/${SESSION}/commands`, { body: JSON.stringify(body), headers });
const nestedArrays = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const nestedObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fleet-hostile-"));
  writeFileSync(join(dir, "index.html"), '<div id="app"></div>');
  writeFileSync(
    join(dir, "tokens.json"),
    JSON.stringify({ tokens: [{ token: TOKEN, tenant: "acme", role: "operate" }] }),
  );
  stack = await startGatewayStack({ gateway: { consoleDir: dir } });
  open = await spawnGateway({ FLEET_GATEWAY_HOSTS: "fleet.test" });
  tokened = await spawnGateway({ FLEET_GATEWAY_TOKENS: join(dir, "tokens.json"), FLEET_TENANT: "acme" });
  for (const sessionId of [SESSION, FLOOD_SESSION]) {
    stack.fake.script(fakeReply("Hello from the fake model."));
    const create = httpRequest("POST", "/v1/sessions", { body: JSON.stringify({ sessionId }) });
    expect((await send(create)).status).toBe(201);
    const prompt = httpRequest("POST", `/v1/sessions/${sessionId}/commands`, {
      body: JSON.stringify({ type: "prompt", text: "hello" }),
    });
    expect((await send(prompt)).status).toBe(200);
    const live = await stack.client.state(sessionId);
    await live.waitFor((v) => v.agent.messages.length >= 2 && !v.agent.isStreaming, 30_000).finally(() => live.close());
  }
}, 120_000);

afterAll(async () => {
  await open?.proc.stop();
  await tokened?.proc.stop();
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("gateway / hostile clients", () => {
  it("loopback mode refuses a DNS-rebinding Host; loopback names and FLEET_GATEWAY_HOSTS pass", async () => {
    const rebound = await send(httpRequest("GET", "/v1/sessions", { host: "evil.example" }));
    expectErrorShape(rebound, 403, "forbidden");
    expect(json(rebound).error.message).toMatch(/FLEET_GATEWAY_HOSTS/);
    const host = `rebind.evil.example:${open.port}`;
    const rename = await send(command({ type: "set_name", name: "pwned" }, { host, origin: `http://${host}` }));
    expectErrorShape(rename, 403, "forbidden");
    expect(json(await send(httpRequest("GET", `/v1/sessions/${SESSION}`))).name).not.toBe("pwned");
    for (const allowed of [
      `127.0.0.1:${open.port}`,
      `localhost:${open.port}`,
      `fleet.test:${open.port}`,
      `[::1]:${open.port}`,
    ]) {
      const answer = await send(httpRequest("GET", `/v1/sessions/${SESSION}`, { host: allowed }));
      expect([allowed, answer.status]).toEqual([allowed, 200]);
    }
    // The public routes too: a rebound page reads nothing.
    expect((await send(httpRequest("GET", "/metrics", { host: "evil.example" }))).status).toBe(403);
  });

  it("loopback mode refuses cross-origin writes (Origin, Sec-Fetch-Site); same-origin writes and reads pass", async () => {
    const self = `http://127.0.0.1:${open.port}`;
    const crossOrigin: Array<Record<string, string>> = [
      { origin: "http://evil.example" },
      { origin: `http://127.0.0.1:${open.port + 1}` },
      { origin: "null" },
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
    ];
    for (const headers of crossOrigin) {
      const answer = await send(command({ type: "set_name", name: "cross" }, headers));
      expectErrorShape(answer, 403, "forbidden");
      expect(json(answer).error.message).toMatch(/cross-origin POST refused/);
    }
    const sameOrigin = await send(
      command(
        { type: "set_name", name: "same-origin" },
        { host: `127.0.0.1:${open.port}`, origin: self, "sec-fetch-site": "same-origin" },
      ),
    );
    expect([sameOrigin.status, json(sameOrigin).event.type]).toEqual([200, "command_accepted"]);
    const read = await send(
      httpRequest("GET", `/v1/sessions/${SESSION}`, {
        headers: { origin: "http://evil.example", "sec-fetch-site": "cross-site" },
      }),
    );
    expect(read.status).toBe(200);
  });

  it("answers 401 (with WWW-Authenticate) before reading any body: headers of a 15 MB body, and no body", async () => {
    const announce = (path: string, headers: Record<string, string>, length: number) =>
      `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n${Object.entries(
        headers,
      )
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("")}\r\n`;
    const credentials: Array<Record<string, string>> = [{}, { authorization: "Bearer not-a-known-token-at-all" }];
    for (const headers of credentials) {
      const answer = await rawRequest(tokened.port, announce("/v1/sessions", headers, 15_000_000), {
        timeoutMs: 5_000,
        closeWaitMs: 2_000,
      });
      expectErrorShape(answer, 401, "unauthorized");
      expect(answer.headers["www-authenticate"]).toBe('Bearer realm="fleet"');
      // At once, and the gateway closes the connection rather than read the 15 MB.
      expect(answer.ms).toBeLessThan(1_000);
      expect([answer.headers.connection, answer.closed]).toEqual(["close", true]);
      console.log(`401 before the body: ${answer.ms.toFixed(1)} ms`);
    }
    // Malformed JSON without a token is a 401, not a 400: nothing is parsed before authentication.
    const malformed = await rawRequest(tokened.port, httpRequest("POST", "/v1/sessions", { body: "{not json" }));
    expectErrorShape(malformed, 401, "unauthorized");
    // With a token, a body over the limit (32 MiB) is refused from its Content-Length, also at once.
    const tooLarge = await rawRequest(
      tokened.port,
      announce("/v1/sessions", { authorization: `Bearer ${TOKEN}` }, 40 * 1024 * 1024),
      { timeoutMs: 5_000, closeWaitMs: 2_000 },
    );
    expectErrorShape(tooLarge, 413, "too_large");
    expect(json(tooLarge).error.message).toContain(String(32 * 1024 * 1024));
    expect([tooLarge.ms < 1_000, tooLarge.closed]).toEqual([true, true]);
    // A request no route authenticates (an unknown path) may send a few KiB at most.
    const unauthenticated = await rawRequest(
      tokened.port,
      httpRequest("POST", "/v1/nothing-here", { body: "x".repeat(10_000), contentType: "text/plain" }),
    );
    expectErrorShape(unauthenticated, 413, "too_large");
    expect((await rawRequest(tokened.port, httpRequest("GET", "/readyz"))).status).toBe(200);
  });

  it("refuses deep JSON with 400 naming the limit, and stays healthy", async () => {
    const cases = [
      httpRequest("POST", `/v1/sessions/${SESSION}/commands`, {
        body: `{"type":"append_custom","customType":"deep","data":${nestedArrays(10_000)}}`,
      }),
      httpRequest("POST", `/v1/sessions/${SESSION}/commands`, {
        body: `{"type":"append_custom","customType":"deep","data":${nestedObjects(10_000)}}`,
      }),
      httpRequest("POST", "/v1/sessions", { body: nestedArrays(100_000) }),
      httpRequest("PUT", "/v1/budget", { body: nestedObjects(100_000) }),
      httpRequest("POST", "/v1/sessions/import", {
        body: `{"type":"session","version":3,"id":"x"}\n${nestedArrays(10_000)}\n`,
        contentType: "application/jsonl",
      }),
    ];
    for (const request of cases) {
      const answer = await send(request);
      expectErrorShape(answer, 400, "invalid");
      expect(json(answer).error.message).toMatch(/deeper than 64 levels/);
      expect(answer.ms).toBeLessThan(2_000);
    }
    expect(open.proc.proc.exitCode).toBeNull();
    expect((await send(httpRequest("GET", "/healthz"))).body).toBe("ok\n");
    // Nesting within the limit is still accepted.
    const fine = await send(
      command({ type: "append_custom", customType: "nested", data: JSON.parse(nestedArrays(60)) }),
    );
    expect([fine.status, json(fine).event.type]).toEqual([200, "command_accepted"]);
    expect(open.proc.output()).not.toMatch(/Maximum call stack/);
  });

  it("bodies are strict at every depth, config of create included; errors quote a short excerpt", async () => {
    const create = await send(
      httpRequest("POST", "/v1/sessions", {
        body: JSON.stringify({
          sessionId: "s-hostile-strict",
          config: { bogusSetting: true, systemPromt: "be brief" },
        }),
      }),
    );
    expectErrorShape(create, 400, "invalid");
    expect(json(create).error.message).toMatch(/bogusSetting/);
    expect(json(create).error.message).toMatch(/systemPromt/);
    const nested = await send(
      httpRequest("POST", "/v1/sessions", {
        body: JSON.stringify({ config: { model: { provider: "anthropic", modelId: "m", region: "eu" } } }),
      }),
    );
    expectErrorShape(nested, 400, "invalid");
    expect(json(nested).error.message).toMatch(/config\.model.*region/);
    const configure = await send(command({ type: "configure", systemPromt: "typo" }));
    expectErrorShape(configure, 400, "invalid");
    const hook = await send(
      httpRequest("POST", "/v1/webhooks", {
        body: JSON.stringify({ url: "http://127.0.0.1:9/", events: ["agent_end"], filter: {} }),
      }),
    );
    expectErrorShape(hook, 400, "invalid");
    // A 5 MB unknown key is named by an excerpt, not echoed.
    const hugeKey = "k".repeat(5 * 1024 * 1024);
    const budget = await send(httpRequest("PUT", "/v1/budget", { body: `{"${hugeKey}":1}` }));
    expectErrorShape(budget, 400, "invalid");
    expect(budget.body.length).toBeLessThan(1_000);
    const hugeValue = await send(
      httpRequest("POST", "/v1/sessions", { body: JSON.stringify({ sessionId: "x".repeat(5 * 1024 * 1024) }) }),
    );
    expectErrorShape(hugeValue, 400, "invalid");
    expect(hugeValue.body.length).toBeLessThan(1_000);
    // A valid config still creates the session.
    const created = await send(
      httpRequest("POST", "/v1/sessions", {
        body: JSON.stringify({ sessionId: "s-hostile-strict", config: { systemPrompt: "be brief" } }),
      }),
    );
    expect(created.status).toBe(201);
  });

  it("fuzz: deep, wide, long and malformed bodies on every body route never get a 5xx", async () => {
    const deep = [
      nestedArrays(10_000),
      nestedObjects(10_000),
      nestedArrays(100_000),
      `${'[{"a":'.repeat(5_000)}1${"}]".repeat(5_000)}`,
    ];
    const wide = [
      `[${"0,".repeat(1_000_000)}0]`,
      `{${Array.from({ length: 100_000 }, (_, i) => `"k${i}":${i}`).join(",")}}`,
      `[${Array.from({ length: 200_000 }, () => "{}").join(",")}]`,
    ];
    const long = [
      JSON.stringify("v".repeat(5_000_000)),
      JSON.stringify({ ["k".repeat(5_000_000)]: true }),
      `"${"\\u0000".repeat(500_000)}"`,
    ];
    const malformed: Array<string | Buffer> = [
      "",
      "{",
      '{"a":',
      "nul\u0000l",
      Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
      '"\\ud800"',
      "\ufeff{}",
      "1e999999",
      "null",
      "[]",
      '{"__proto__":{"polluted":true}}',
      '{"constructor":{"prototype":{"polluted":true}}}',
    ];
    /** Each input alone, and inside the part of the body a route leaves open (custom data, config). */
    const asIs = [...deep, ...wide, ...long, ...malformed];
    const wrapped = [...deep, ...wide, ...long].flatMap((value) => [
      `{"type":"append_custom","customType":"fuzz","data":${value}}`,
      `{"type":"prompt","text":"x","images":${value}}`,
    ]);
    const routes: Array<[string, string, Array<string | Buffer>, string?]> = [
      ["POST", "/v1/sessions", [...asIs, ...deep.map((v) => `{"config":{"model":${v}}}`)]],
      ["POST", `/v1/sessions/${SESSION}/commands`, [...asIs, ...wrapped]],
      ["PUT", "/v1/budget", asIs],
      ["POST", "/v1/webhooks", asIs],
      [
        "POST",
        "/v1/sessions/import",
        [...asIs, ...deep.map((v) => `{"type":"session","version":3}\n${v}`)],
        "application/jsonl",
      ],
    ];
    const statuses = new Map<number, number>();
    let slowest = { ms: 0, label: "" };
    for (const [method, path, bodies, contentType] of routes) {
      for (const body of bodies) {
        const answer = await send(httpRequest(method, path, { body, ...(contentType ? { contentType } : {}) }), {
          timeoutMs: 20_000,
        });
        const label = `${method} ${path} ${String(body).slice(0, 40)}… (${body.length} bytes)`;
        expect([label, answer.status < 500]).toEqual([label, true]);
        if (answer.status >= 400) expectErrorShape(answer, answer.status);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.ms > slowest.ms) slowest = { ms: answer.ms, label };
      }
    }
    console.log(
      `fuzz: ${[...statuses].map(([s, n]) => `${n}× ${s}`).join(", ")}; slowest ${slowest.ms.toFixed(0)} ms (${slowest.label})`,
    );
    // No input keeps the gateway busy: the wide ones are refused before validation looks at each value.
    expect(slowest.ms).toBeLessThan(3_000);
    expect(open.proc.proc.exitCode).toBeNull();
    expect((await send(httpRequest("GET", "/healthz"))).status).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(open.proc.output()).not.toMatch(/Maximum call stack|"evt":"http_handler_failed"|"evt":"http_error"/);
  }, 240_000);

  it("security headers: nosniff on JSON, SSE and metrics; a strict CSP and no framing for the console", async () => {
    const answers = {
      json: await send(httpRequest("GET", `/v1/sessions/${SESSION}`)),
      metrics: await send(httpRequest("GET", "/metrics")),
      openapi: await send(httpRequest("GET", "/openapi.json")),
      error: await send(httpRequest("GET", "/v1/sessions/s-none")),
    };
    for (const [what, answer] of Object.entries(answers)) {
      expect([what, answer.headers["x-content-type-options"], answer.headers["x-frame-options"]]).toEqual([
        what,
        "nosniff",
        "DENY",
      ]);
      expect(answer.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    }
    const sseHead = await send(httpRequest("GET", `/v1/sessions/${SESSION}/events?follow=false`));
    expect(sseHead.body).toContain("event: session_created");
    expect(sseHead.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    expect(sseHead.headers["x-content-type-options"]).toBe("nosniff");
    // The console (the in-process gateway of the stack serves a stand-in build).
    const page = await rawRequest(stack.gateway.port, httpRequest("GET", "/sessions/x"));
    expect([page.status, page.headers["content-type"]]).toEqual([200, "text/html; charset=utf-8"]);
    expect(page.headers["x-frame-options"]).toBe("DENY");
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
    const csp = page.headers["content-security-policy"] ?? "";
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    const unauthorized = await rawRequest(tokened.port, httpRequest("GET", "/v1/sessions"));
    expect(unauthorized.headers["www-authenticate"]).toBe('Bearer realm="fleet"');
  });

  it("every error is JSON {error: {code, message}}: the router's and the HTTP parser's too", async () => {
    const cases: Array<[string, Buffer | string, number, string?]> = [
      ["unknown route", httpRequest("GET", "/v1/nothing-here"), 404, "not_found"],
      ["long unknown path", httpRequest("GET", `/v1/${"a".repeat(10_000)}`), 404, "not_found"],
      ["bad percent-encoding", httpRequest("GET", "/v1/sessions/%c0%af"), 400, "invalid"],
      [
        "long path parameter",
        httpRequest("POST", `/v1/sessions/${"a".repeat(500)}/commands`, { body: "{}" }),
        414,
        "too_long",
      ],
      ["bad session id", httpRequest("GET", "/v1/sessions/not.a.session"), 400, "invalid"],
      [
        "unsupported media type",
        httpRequest("POST", "/v1/sessions", { body: "<x/>", contentType: "application/xml" }),
        415,
        "unsupported_media_type",
      ],
      ["empty JSON body", httpRequest("POST", "/v1/sessions", { body: "" }), 400, "invalid"],
      [
        "invalid UTF-8 body",
        httpRequest("POST", "/v1/sessions", { body: Buffer.from([0x7b, 0xc3, 0x28, 0x7d]) }),
        400,
        "invalid",
      ],
      [
        "raw NUL in the URL",
        Buffer.from("GET /v1/sess\u0000ions HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n", "latin1"),
        400,
        "invalid",
      ],
      [
        "raw bad UTF-8 in the URL",
        Buffer.concat([
          Buffer.from("GET /v1/sessions/s-"),
          Buffer.from([0xc3, 0x28]),
          Buffer.from(" HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"),
        ]),
        400,
        "invalid",
      ],
      [
        "bad UTF-8 in a header",
        Buffer.concat([
          Buffer.from("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-a: "),
          Buffer.from([0xff, 0x00]),
          Buffer.from("\r\n\r\n"),
        ]),
        400,
        "invalid",
      ],
      ["not HTTP", "HELLO\r\n\r\n", 400, "invalid"],
      [
        "headers too large",
        `GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`,
        431,
        "too_large",
      ],
      [
        "bad content-length",
        "POST /v1/sessions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: abc\r\n\r\n",
        400,
        "invalid",
      ],
    ];
    for (const [what, request, status, code] of cases) {
      const answer = await send(request);
      expect([what, answer.status]).toEqual([what, status]);
      expectErrorShape(answer, status, code);
    }
    expect((await send(httpRequest("GET", "/healthz"))).status).toBe(200);
  });

  it("memory returns to its level within 5 s after 2,000 SSE connections are opened and dropped", async () => {
    // A gateway of its own, so that what the other tests left does not count.
    const gateway = await spawnGateway({});
    const send = (request: Buffer) => rawRequest(gateway.port, request);
    const pid = gateway.proc.proc.pid as number;
    const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;
    const heapMb = async () => {
      const text = (await send(httpRequest("GET", "/metrics"))).body;
      return Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1]) / 1024 / 1024;
    };
    // Time the gateway's main thread was runnable but waited for a CPU: what a loaded machine adds
    // to a wall-clock wait that is not the gateway's doing (0 on an idle one).
    const waitedMs = () => Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[1]) / 1e6;
    const path = `/v1/sessions/${FLOOD_SESSION}/events`;
    const flood = async () => {
      const before = { rss: rssMb(), heap: await heapMb() };
      const started = performance.now();
      const sockets = await openStreams(gateway.port, path, 2_000);
      const openedMs = performance.now() - started;
      const open = { rss: rssMb(), heap: await heapMb() };
      for (const socket of sockets) socket.destroy();
      return { before, open, openedMs, dropped: { at: performance.now(), waited: waitedMs() } };
    };
    /**
     * Polls until `ok` holds or the gateway's own time since `from` (wall-clock time less what it
     * waited for a CPU) passed `ms`: the last sample, when it was complete (wall clock) and the
     * gateway's time then. At most 6 × `ms` of wall clock, below the minute V8 kept the memory alone.
     */
    const settle = async (
      from: { at: number; waited: number },
      ms: number,
      ok: (s: { rss: number; heap: number }) => boolean,
    ) => {
      const elapsed = () => {
        const afterMs = performance.now() - from.at;
        return { afterMs, ownMs: afterMs - (waitedMs() - from.waited) };
      };
      let sample = { rss: rssMb(), heap: await heapMb() };
      let at = elapsed();
      while (!ok(sample) && at.ownMs < ms && at.afterMs < ms * 6) {
        await new Promise((r) => setTimeout(r, 250));
        sample = { rss: rssMb(), heap: await heapMb() };
        at = elapsed();
      }
      return { ...sample, ...at };
    };
    const report = (name: string, f: Awaited<ReturnType<typeof flood>>, after: Awaited<ReturnType<typeof settle>>) =>
      console.log(
        `${name}: 2,000 SSE streams open in ${f.openedMs.toFixed(0)} ms; RSS ${f.before.rss.toFixed(1)} MB before, ${f.open.rss.toFixed(1)} MB open, ${after.rss.toFixed(1)} MB ${after.afterMs.toFixed(0)} ms after the drop (${after.ownMs.toFixed(0)} ms of the gateway's own time); heap used ${f.before.heap.toFixed(1)} / ${f.open.heap.toFixed(1)} / ${after.heap.toFixed(1)} MB`,
      );
    // The first flood also compiles code and grows the allocator's pools for good: the level is that
    // of a gateway that has served one. The heap V8 uses must come back to what a fresh one used.
    const first = await flood();
    const freshHeap = first.before.heap;
    report("first flood", first, await settle(first.dropped, 8_000, () => false));
    const second = await flood();
    const level = second.before;
    const back = (s: { rss: number; heap: number }) => s.rss <= level.rss + 10 && s.heap <= freshHeap + 8;
    const after = await settle(second.dropped, 5_000, back);
    report("second flood", second, after);
    expect(back(after)).toBe(true);
    // Within 5 s of the gateway's own time: on an idle machine, 5 s of wall clock.
    expect(after.ownMs).toBeLessThanOrEqual(5_000);
    expect(gateway.proc.output()).toContain('"evt":"gateway_memory_released"');
    expect((await send(httpRequest("GET", "/healthz"))).status).toBe(200);
    await gateway.proc.stop();
  }, 180_000);
});
