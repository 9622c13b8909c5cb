import { encodeToolResultRecord, type ToolFinalRecord } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { createMemoryBlobSink } from "../memory-blob-sink.js";
import { limitFinalRecord } from "./limit-record.js";

describe("limitFinalRecord", () => {
  it("leaves records within the limit alone", async () => {
    const rec: ToolFinalRecord = { kind: "result", content: [{ type: "text", text: "ok" }], isError: false };
    expect(await limitFinalRecord(rec, createMemoryBlobSink(), "t", 1000)).toBe(rec);
  });

  it("truncates an oversized record and stores it whole in the blob store", async () => {
    const blobs = createMemoryBlobSink("fleet_blobs");
    const big = "a".repeat(300_000);
    const rec: ToolFinalRecord = {
      kind: "result",
      content: [{ type: "text", text: big }],
      details: { n: 1 },
      isError: false,
    };
    const out = await limitFinalRecord(rec, blobs, "t", 200_000);
    const encoded = encodeToolResultRecord(out);
    expect(encoded.ok && encoded.bytes.byteLength <= 200_000).toBe(true);
    const stored = JSON.parse(new TextDecoder().decode(blobs.blobs.get("result.json")));
    expect(stored).toEqual({ content: rec.content, details: { n: 1 } });
    expect(out.details).toMatchObject({
      n: 1,
      fullOutput: { bucket: "fleet_blobs", name: "result.json", size: 300_057 },
    });
    const note = out.content.at(-1) as { text: string };
    expect(note.text).toMatch(
      /^\[Output truncated: the result is 300057 bytes, over the 200000-byte limit \(FLEET_MAX_TOOL_RESULT_BYTES\); \d+ of 300000 text bytes shown\. Full output: blob fleet_blobs\/result\.json\]$/,
    );
    expect((out.content[0] as { text: string }).text).toBe(
      big.slice(0, (out.content[0] as { text: string }).text.length),
    );
  });

  it("turns content that does not match the protocol into an error result", async () => {
    const rec = {
      kind: "result",
      content: [{ type: "video", url: "x" }],
      isError: false,
    } as unknown as ToolFinalRecord;
    const out = await limitFinalRecord(rec, createMemoryBlobSink(), "weird");
    expect(out.isError).toBe(true);
    expect((out.content[0] as { text: string }).text).toMatch(/^Tool weird returned an invalid result: content\.0/);
  });
});
