import { createLogBuilder, emitMessage } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { eventOf, parseFrames } from "./sse.js";

/** Frames as the gateway writes them (services/gateway, sse/frame.ts), with a comment among them. */
function sseText(): { text: string; count: number } {
  const log = createLogBuilder(3);
  for (let i = 0; i < 5; i++) emitMessage(log, { role: "user", content: `q${i}`, timestamp: i });
  const frames = log.events.map((e, i) => `id: ${i + 1}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
  frames.splice(2, 0, ": keepalive\n\n");
  return { text: frames.join(""), count: log.events.length };
}

describe("parseFrames", () => {
  it("reads every frame in order, skipping comments, whatever the chunks", () => {
    const { text, count } = sseText();
    const whole = parseFrames(text);
    expect(whole.rest).toBe("");
    expect(whole.items.map((i) => i.seq)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    for (const size of [1, 7, 100]) {
      let rest = "";
      const seqs: number[] = [];
      for (let at = 0; at < text.length; at += size) {
        const parsed = parseFrames(rest + text.slice(at, at + size));
        rest = parsed.rest;
        seqs.push(...parsed.items.map((i) => i.seq));
      }
      expect(seqs).toEqual(whole.items.map((i) => i.seq));
      expect(rest).toBe("");
    }
  });

  it("skips frames whose data is not an event the fold can take", () => {
    const meta = { v: 1, id: "e1", sessionId: "s", ts: 1 };
    const frames = [
      "id: 1\ndata: not json\n\n",
      `id: 2\ndata: ${JSON.stringify({ type: "no_such_event", meta })}\n\n`,
      `id: 3\ndata: ${JSON.stringify({ type: "agent_start" })}\n\n`,
      `data: ${JSON.stringify({ type: "agent_start", meta })}\n\n`,
      `id: 5\ndata: ${JSON.stringify({ type: "agent_start", meta })}\n\n`,
    ];
    expect(parseFrames(frames.join("")).items.map((i) => i.seq)).toEqual([5]);
    expect(eventOf("null")).toBeUndefined();
  });
});
