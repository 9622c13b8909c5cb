import { describe, expect, it } from "vitest";
import { parseMcpConfig } from "./mcp-config.js";

describe("parseMcpConfig", () => {
  it("reads the desktop clients' format: stdio and HTTP entries, with Fleet's defaults", () => {
    const parsed = parseMcpConfig(
      JSON.stringify({
        mcpServers: {
          fs: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/data"], cwd: "/data" },
          web: { url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer t" } },
          online: { command: "node", args: ["s.js"], env: { KEY: "v" }, network: true, readOnlyPaths: ["/opt/s"] },
        },
      }),
    );
    expect(parsed).toEqual({
      ok: true,
      config: {
        mcpServers: {
          fs: {
            command: "npx",
            args: ["-y", "@modelcontextprotocol/server-filesystem", "/data"],
            cwd: "/data",
            env: {},
            network: false,
            readOnlyPaths: [],
          },
          web: { url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer t" } },
          online: { command: "node", args: ["s.js"], env: { KEY: "v" }, network: true, readOnlyPaths: ["/opt/s"] },
        },
      },
    });
  });

  it("refuses what it cannot serve, naming the field", () => {
    expect(parseMcpConfig("{")).toMatchObject({ ok: false, error: expect.stringMatching(/^not JSON/) });
    expect(parseMcpConfig(JSON.stringify({ mcpServers: { "a.b": { command: "x" } } }))).toMatchObject({
      ok: false,
      error: expect.stringContaining("mcpServers"),
    });
    expect(parseMcpConfig(JSON.stringify({ mcpServers: { a: { command: "x", typo: 1 } } }))).toMatchObject({
      ok: false,
      error: expect.stringContaining("mcpServers.a"),
    });
    expect(parseMcpConfig(JSON.stringify({ mcpServers: { a: { url: "not a url" } } }))).toMatchObject({ ok: false });
  });
});
