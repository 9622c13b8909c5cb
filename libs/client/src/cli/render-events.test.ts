import { type EventBody, emptyUsage, type FleetEvent } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { createStyle } from "./ansi.js";
import { EventRenderer } from "./render-events.js";

const meta = { v: 1 as const, id: "e", sessionId: "s", ts: 1, producer: "test" };
const assistant = (text: string, extra: Record<string, unknown> = {}) => ({
  role: "assistant" as const,
  content: text ? [{ type: "text" as const, text }] : [],
  api: "x",
  provider: "x",
  model: "x",
  usage: emptyUsage(),
  stopReason: "stop" as const,
  timestamp: 1,
  ...extra,
});

function render(events: EventBody[], opts: { color?: boolean; echoed?: string[] } = {}) {
  let out = "";
  const renderer = new EventRenderer(
    { write: (t: string) => (out += t) },
    { style: createStyle(opts.color ?? false), animate: false, echoed: new Set(opts.echoed ?? []) },
  );
  for (const e of events) renderer.handle({ ...e, meta } as FleetEvent);
  renderer.stop();
  return out;
}

describe("EventRenderer", () => {
  it("streams text deltas as they come, dims thinking, and shows tool calls with their result", () => {
    const out = render(
      [
        {
          type: "message_end",
          message: { role: "user", content: [{ type: "text", text: "typed" }], timestamp: 1 },
          entry: { id: "u", parentId: null },
        },
        { type: "message_start", message: assistant("") },
        {
          type: "message_update",
          deltas: [
            { type: "thinking_start", contentIndex: 0 },
            { type: "thinking_delta", contentIndex: 0, delta: "hmm" },
          ],
        },
        {
          type: "message_update",
          deltas: [
            { type: "text_start", contentIndex: 1 },
            { type: "text_delta", contentIndex: 1, delta: "Hel" },
          ],
        },
        { type: "message_update", deltas: [{ type: "text_delta", contentIndex: 1, delta: "lo" }] },
        { type: "message_end", message: assistant("Hello"), entry: { id: "a", parentId: "u" } },
        { type: "tool_execution_start", toolCallId: "t1", toolName: "read", args: { path: "a.txt" } },
        {
          type: "tool_execution_end",
          toolCallId: "t1",
          toolName: "read",
          result: { content: [{ type: "text", text: "l1\nl2\nl3\nl4\nl5" }] },
          isError: false,
        },
        { type: "agent_end", messages: [] },
      ] as EventBody[],
      { color: true, echoed: ["typed"] },
    );
    expect(out).toBe(
      [
        "\u001b[2mhmm\u001b[22m",
        "Hello",
        '\u001b[2m… read(path: "a.txt")\u001b[22m',
        '\u001b[32m✓ read(path: "a.txt")\u001b[39m',
        "\u001b[2m  l1\u001b[22m",
        "\u001b[2m  l2\u001b[22m",
        "\u001b[2m  l3\u001b[22m",
        "\u001b[2m  … 2 more lines\u001b[22m",
        "",
      ].join("\n"),
    );
  });

  it("prints a message that was not streamed, an abort, an error and a rejection", () => {
    const out = render([
      { type: "message_start", message: assistant("") },
      { type: "message_end", message: assistant("whole"), entry: { id: "a", parentId: null } },
      { type: "message_start", message: assistant("") },
      { type: "message_update", deltas: [{ type: "text_delta", contentIndex: 0, delta: "par" }] },
      {
        type: "message_end",
        message: assistant("par", { stopReason: "aborted", errorMessage: "Request was aborted" }),
        entry: { id: "b", parentId: "a" },
      },
      { type: "message_start", message: assistant("") },
      {
        type: "message_end",
        message: assistant("", { stopReason: "error", errorMessage: "overloaded" }),
        entry: { id: "c", parentId: "b" },
      },
      { type: "command_rejected", commandId: "c1", commandType: "prompt", code: "busy", reason: "a run is active" },
      {
        type: "message_end",
        message: { role: "user", content: [{ type: "text", text: "steered" }], timestamp: 1 },
        entry: { id: "u", parentId: "c" },
      },
    ] as EventBody[]);
    expect(out).toBe(
      ["whole", "par", "⏹ aborted", "✗ overloaded", "✗ prompt rejected (busy): a run is active", "› steered", ""].join(
        "\n",
      ),
    );
  });
});
