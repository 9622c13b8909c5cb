import { encodeEvent, type FleetEvent } from "@fleet/protocol";
import { assistantMessage, createLogBuilder, textOf } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { sseParser } from "../testing/sse-reader.js";
import { commentFrame, encodeFrame, eventFrameParts, resumeAfter } from "./frame.js";

const event: FleetEvent = createLogBuilder(1).add({
  type: "message_end",
  message: assistantMessage([textOf('line 1\nline 2 "quoted" é')]),
});

describe("gateway / SSE framing", () => {
  it("resumes after Last-Event-ID, else ?after=, else from the start", () => {
    expect(resumeAfter("42", 7)).toBe(42);
    expect(resumeAfter(" 42 ", undefined)).toBe(42);
    expect(resumeAfter(undefined, 7)).toBe(7);
    expect(resumeAfter("", 7)).toBe(7);
    expect(resumeAfter(undefined, undefined)).toBe(0);
    expect(resumeAfter("4x", 7)).toBe("invalid");
    expect(resumeAfter("-1", 7)).toBe("invalid");
  });

  it("keeps comments on one line, and the test client parses frames split anywhere", () => {
    expect(commentFrame("a\nb")).toBe(": a b\n\n");
    const frames: unknown[] = [];
    const feed = sseParser((f) => frames.push(f));
    const text = 'id: 3\nevent: leaf\ndata: {"a":1}\n\n: keepalive\n\n';
    for (const ch of text) feed(ch);
    expect(frames).toEqual([{ id: "3", event: "leaf", data: '{"a":1}' }, { comment: "keepalive" }]);
  });

  it("encodes frames once, as bytes and as one HTTP/1.1 chunk", () => {
    const frame = encodeFrame(["id: 1\n", Buffer.from("data: é\n\n")]);
    expect(frame.bytes.toString()).toBe("id: 1\ndata: é\n\n");
    expect(frame.chunk.toString()).toBe("10\r\nid: 1\ndata: é\n\n\r\n");
  });

  it("frames the event's stored JSON as it is when it is one line, else the event serialised again", () => {
    const text = (json: Uint8Array) => encodeFrame(eventFrameParts(7, event, json)).bytes.toString();
    const stored = Buffer.from(`{"note":"as stored",${JSON.stringify(event).slice(1)}`);
    expect(text(stored)).toBe(`id: 7\nevent: message_end\ndata: ${stored}\n\n`);
    const again = `id: 7\nevent: message_end\ndata: ${JSON.stringify(event)}\n\n`;
    expect(text(Buffer.from(JSON.stringify(event, null, 2)))).toBe(again);
    expect(text(Buffer.from(`\r${JSON.stringify(event)}`))).toBe(again);
    expect(text(Buffer.from(`\uFEFF${JSON.stringify(event)}`))).toBe(again);
  });

  it("an event appended by the loop frames the same from its stored bytes as serialised again", () => {
    const encoded = encodeEvent(event);
    if (!encoded.ok) throw new Error(encoded.error);
    const fromBytes = encodeFrame(eventFrameParts(3, event, encoded.bytes)).bytes.toString();
    expect(fromBytes).toBe(`id: 3\nevent: message_end\ndata: ${JSON.stringify(event)}\n\n`);
  });
});
