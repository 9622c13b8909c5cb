import { describe, expect, it } from "vitest";
import { buildMcpToolOutput } from "./mcp-result.js";

describe("buildMcpToolOutput", () => {
  it("keeps text, images, isError and structured content", () => {
    const out = buildMcpToolOutput("srv", "t", {
      content: [
        { type: "text", text: "hi" },
        { type: "image", data: "aGk=", mimeType: "image/png" },
      ],
      structuredContent: { n: 1 },
      isError: true,
    });
    expect(out).toEqual({
      content: [
        { type: "text", text: "hi" },
        { type: "image", data: "aGk=", mimeType: "image/png" },
      ],
      details: { server: "srv", tool: "t", structuredContent: { n: 1 } },
      isError: true,
    });
  });

  it("names audio, links and binary resources in text and keeps their data in details", () => {
    const out = buildMcpToolOutput("srv", "t", {
      content: [
        { type: "audio", data: "AAAA", mimeType: "audio/wav" },
        { type: "resource_link", uri: "file:///a.txt", name: "a" },
        { type: "resource", resource: { uri: "file:///b.txt", text: "inline text" } },
        { type: "resource", resource: { uri: "file:///c.bin", mimeType: "application/gzip", blob: "H4sI" } },
      ],
    });
    expect(out.content).toEqual([
      { type: "text", text: "[audio audio/wav, 4 base64 characters]" },
      { type: "text", text: "[resource file:///a.txt (a)]" },
      { type: "text", text: "inline text" },
      { type: "text", text: "[resource file:///c.bin application/gzip, binary]" },
    ]);
    expect(out.details).toEqual({
      server: "srv",
      tool: "t",
      attachments: [
        { type: "audio", mimeType: "audio/wav", data: "AAAA" },
        { type: "resource", uri: "file:///c.bin", mimeType: "application/gzip", data: "H4sI" },
      ],
    });
    expect(out.isError).toBe(false);
  });

  it("shows structured content as JSON text when the server sent no content", () => {
    expect(buildMcpToolOutput("s", "t", { structuredContent: { a: 1 } }).content).toEqual([
      { type: "text", text: '{"a":1}' },
    ]);
  });
});
