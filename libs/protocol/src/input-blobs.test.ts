import { describe, expect, it } from "vitest";
import { decodeCommand, decodeCommandBodyRef } from "./codec.js";
import type { FleetCommand } from "./commands.js";
import {
  blobRefsIn,
  bytesToBase64,
  forEachContentBlock,
  hasBlobBlocks,
  INLINE_CONTENT_BYTES,
  inputsMovedToBlobs,
  isBlobBlock,
  mapContentBlocks,
  planInputParts,
  resolvedBlock,
  TEXT_PREVIEW_CHARS,
  withDigests,
} from "./input-blobs.js";
import { estimateTokens } from "./reducers/token-estimate.js";

const long = "é".repeat(INLINE_CONTENT_BYTES); // 2 bytes each: over the limit
const image = bytesToBase64(new Uint8Array(INLINE_CONTENT_BYTES).map((_, i) => i % 251));
const prompt = (fields: Record<string, unknown>) =>
  ({ type: "prompt", id: "c-1", sessionId: "s-1", ts: 5, ...fields }) as FleetCommand;

describe("planInputParts", () => {
  it("leaves a command with small parts as it is", () => {
    const command = prompt({ text: "hello", images: [{ type: "image", data: "aGk=", mimeType: "image/png" }] });
    expect(planInputParts(command)).toEqual({ command, parts: [] });
  });

  it("moves a long text input into a message whose text block is a reference with a preview", () => {
    const { command, parts } = planInputParts(prompt({ text: long }));
    expect(parts).toEqual([
      { name: "input/s-1/c-1/0", bytes: new TextEncoder().encode(long), mimeType: "text/plain; charset=utf-8" },
    ]);
    expect(command).toEqual({
      type: "prompt",
      id: "c-1",
      sessionId: "s-1",
      ts: 5,
      message: {
        role: "user",
        timestamp: 5,
        content: [
          {
            type: "text",
            text: `${long.slice(0, TEXT_PREVIEW_CHARS)}…`,
            blob: {
              bucket: "fleet_inputs",
              name: "input/s-1/c-1/0",
              size: long.length * 2,
              mimeType: parts[0]?.mimeType,
            },
          },
        ],
      },
    });
    expect(decodeCommand(JSON.stringify(command)).ok).toBe(true);
  });

  it("stores an image's bytes, not its base64, and numbers parts in visiting order", () => {
    const { command, parts } = planInputParts(
      prompt({ text: "look", images: [{ type: "image", data: image, mimeType: "image/png" }] }),
    );
    expect(parts.map((p) => [p.name, p.bytes.byteLength, p.mimeType])).toEqual([
      ["input/s-1/c-1/0", INLINE_CONTENT_BYTES, "image/png"],
    ]);
    const block = (command as { images: unknown[] }).images[0];
    expect(block).toEqual({
      type: "image",
      data: "",
      mimeType: "image/png",
      blob: { bucket: "fleet_inputs", name: "input/s-1/c-1/0", size: INLINE_CONTENT_BYTES, mimeType: "image/png" },
    });
    expect(resolvedBlock(block as never, parts[0]?.bytes as Uint8Array)).toEqual({
      type: "image",
      data: image,
      mimeType: "image/png",
    });
  });

  it("reaches the blocks of imported entries, string contents included", () => {
    const command = {
      type: "import_session",
      id: "c-2",
      sessionId: "s-2",
      entries: [
        {
          type: "message",
          id: "a",
          parentId: null,
          timestamp: 1,
          message: { role: "user", content: long, timestamp: 1 },
        },
        {
          type: "message",
          id: "b",
          parentId: "a",
          timestamp: 2,
          message: {
            role: "toolResult",
            toolCallId: "t",
            toolName: "read",
            isError: false,
            timestamp: 2,
            content: [
              { type: "text", text: "small" },
              { type: "image", data: image, mimeType: "image/jpeg" },
            ],
          },
        },
      ],
    } as FleetCommand;
    const { command: planned, parts } = planInputParts(command);
    expect(parts.map((p) => p.name)).toEqual(["input/s-2/c-2/0", "input/s-2/c-2/1"]);
    const refs = blobRefsIn(planned);
    expect(refs.map((r) => r.name)).toEqual(["input/s-2/c-2/0", "input/s-2/c-2/1"]);
    const moved = withDigests(inputsMovedToBlobs(planned), new Map([["input/s-2/c-2/1", "SHA-256=x"]]));
    expect(blobRefsIn(moved).map((r) => [r.bucket, r.digest])).toEqual([
      ["fleet_blobs", undefined],
      ["fleet_blobs", "SHA-256=x"],
    ]);
    // The input was not changed.
    expect(blobRefsIn(command)).toEqual([]);
    expect(decodeCommand(JSON.stringify(moved)).ok).toBe(true);
  });
});

describe("content by reference", () => {
  it("counts a referenced text's size in the token estimate, not its preview", () => {
    const { command } = planInputParts(prompt({ text: long }));
    const message = (command as unknown as { message: never }).message;
    expect(estimateTokens(message)).toBe(Math.ceil((long.length * 2) / 4));
  });

  it("keeps unchanged branches' identity when mapping blocks", () => {
    const value = { a: [{ type: "text", text: "x" }], b: { c: 1 } };
    expect(mapContentBlocks(value, (b) => b)).toBe(value);
    const mapped = mapContentBlocks(value, (b) => ({ ...b, text: "y" }));
    expect(mapped.b).toBe(value.b);
    expect(mapped.a[0]).toEqual({ type: "text", text: "y" });
    expect(isBlobBlock({ type: "text", text: "", blob: { bucket: "b", name: "n", size: 0 } })).toBe(true);
    expect(isBlobBlock({ type: "text", text: "" })).toBe(false);
  });

  it("walks blocks in mapContentBlocks' order without copying, and finds references", () => {
    const ref = { bucket: "fleet_blobs", name: "n", size: 3 };
    const value = {
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "a" },
            { type: "image", data: "AA", mimeType: "image/png" },
          ],
        },
        {
          role: "toolResult",
          content: [{ type: "text", text: "b", blob: ref }],
          details: { nested: { type: "text", text: "c" } },
        },
      ],
    };
    const mapped: string[] = [];
    mapContentBlocks(value, (b) => {
      mapped.push(b.type === "text" ? b.text : b.data);
      return b;
    });
    const walked: string[] = [];
    forEachContentBlock(value, (b) => walked.push(b.type === "text" ? b.text : b.data));
    expect(walked).toEqual(["a", "AA", "b", "c"]);
    expect(walked).toEqual(mapped);
    expect(blobRefsIn(value)).toEqual([ref]);
    expect(hasBlobBlocks(value)).toBe(true);
    expect(hasBlobBlocks(value.messages[0])).toBe(false);
    expect(hasBlobBlocks("text")).toBe(false);
  });

  it("decodes a command by reference's envelope, and only that", () => {
    const envelope = {
      type: "import_session",
      id: "c-3",
      sessionId: "s-3",
      bodyRef: { bucket: "fleet_inputs", name: "input/s-3/c-3/command.json", size: 10 },
    };
    expect(decodeCommandBodyRef(JSON.stringify(envelope))).toEqual({ ok: true, value: envelope });
    expect(decodeCommandBodyRef(JSON.stringify({ ...envelope, entries: [] }))).toMatchObject({ ok: false });
    expect(decodeCommandBodyRef(JSON.stringify({ type: "abort", id: "c", sessionId: "s" }))).toBeUndefined();
  });
});
