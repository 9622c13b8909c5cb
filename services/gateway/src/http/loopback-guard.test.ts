import { describe, expect, it } from "vitest";
import { hostnameOf, isLoopbackHostname, loopbackRefusal, type RequestOrigin } from "./loopback-guard.js";

const allowed = new Set(["fleet.example.com"]);
const req = (over: Partial<RequestOrigin>): RequestOrigin => ({
  method: "GET",
  host: "127.0.0.1:8787",
  origin: undefined,
  secFetchSite: undefined,
  ...over,
});

describe("gateway / loopback guard", () => {
  it("reads the host name of a Host header", () => {
    expect(hostnameOf("127.0.0.1:8787")).toBe("127.0.0.1");
    expect(hostnameOf("LocalHost:1")).toBe("localhost");
    expect(hostnameOf("localhost.")).toBe("localhost");
    expect(hostnameOf("[::1]:8787")).toBe("[::1]");
    expect(hostnameOf("2130706433")).toBe("127.0.0.1");
    expect(hostnameOf("a@evil.example")).toBeUndefined();
    expect(hostnameOf("evil.example/path")).toBeUndefined();
    expect(hostnameOf("")).toBeUndefined();
  });

  it("answers requests addressed by a loopback name or a configured host; refuses any other Host (DNS rebinding)", () => {
    for (const host of [
      "127.0.0.1:8787",
      "localhost:8787",
      "app.localhost",
      "[::1]:8787",
      "127.1.2.3",
      "fleet.example.com",
    ]) {
      expect([host, loopbackRefusal(req({ host }), allowed)]).toEqual([host, undefined]);
    }
    expect(loopbackRefusal(req({ host: undefined }), allowed)).toBeUndefined();
    for (const host of [
      "evil.example",
      "evil.example:8787",
      "127.0.0.1.evil.example",
      "0.0.0.0:8787",
      "10.0.0.1",
      "",
    ]) {
      expect(loopbackRefusal(req({ host, method: "GET" }), allowed)).toMatchObject({
        status: 403,
        code: "forbidden",
        message: expect.stringMatching(/FLEET_GATEWAY_HOSTS/),
      });
    }
    expect([isLoopbackHostname("localhost"), isLoopbackHostname("localhost.evil.example")]).toEqual([true, false]);
  });

  it("refuses cross-origin writes by Origin or Sec-Fetch-Site; reads and same-origin writes pass", () => {
    const post = (over: Partial<RequestOrigin>) => loopbackRefusal(req({ method: "POST", ...over }), allowed);
    expect(post({})).toBeUndefined();
    expect(post({ origin: "http://127.0.0.1:8787", secFetchSite: "same-origin" })).toBeUndefined();
    expect(post({ host: "fleet.example.com", origin: "https://fleet.example.com" })).toBeUndefined();
    expect(post({ secFetchSite: "none" })).toBeUndefined();
    for (const over of [
      { origin: "http://evil.example" },
      { origin: "http://127.0.0.1:3000" },
      { origin: "http://localhost:8787" },
      { origin: "null" },
      { origin: "http://127.0.0.1:8787/x" },
      { secFetchSite: "cross-site" },
      { secFetchSite: "same-site" },
      { origin: "http://127.0.0.1:8787", secFetchSite: "cross-site" },
    ]) {
      expect([over, post(over)?.status]).toEqual([over, 403]);
      expect(loopbackRefusal(req({ method: "DELETE", ...over }), allowed)?.status).toBe(403);
      expect(loopbackRefusal(req({ method: "GET", ...over }), allowed)).toBeUndefined();
    }
  });

  it("lets the origins of FLEET_GATEWAY_CORS_ORIGINS write, but keeps the Host check", () => {
    const cors = new Set(["http://127.0.0.1:3000"]);
    const post = (over: Partial<RequestOrigin>) => loopbackRefusal(req({ method: "POST", ...over }), allowed, cors);
    expect(post({ origin: "http://127.0.0.1:3000", secFetchSite: "same-site" })).toBeUndefined();
    expect(post({ origin: "http://127.0.0.1:3001", secFetchSite: "same-site" })?.status).toBe(403);
    expect(post({ origin: "http://127.0.0.1:3000", host: "evil.example" })?.status).toBe(403);
  });
});
