// Bad commands, as bytes off the wire: each earns one `command_rejected` with a clear code and
// reason, decided without a server (the NATS-level test keeps what crosses a process).
import { CONFIG, type EventInput } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { given, ONE_RUN } from "../testing/decider-spec.js";
import { commandInput } from "./command-input.js";

/** A session with one finished run (`s-1`, the spec session). */
const session: EventInput[] = [{ type: "session_created", config: CONFIG }, ...ONE_RUN];

const S = "s-1";
const bytes = (data: string | Uint8Array) => (typeof data === "string" ? new TextEncoder().encode(data) : data);
/** A message with a `Nats-Msg-Id` header `msgId`, or none (answered as `seq:7`). */
const wire = (data: string | Uint8Array, msgId?: string) =>
  commandInput({ data: bytes(data), commandRef: msgId ?? "seq:7", hasMsgId: msgId !== undefined });

const cases: Array<{
  name: string;
  data: string | Uint8Array;
  msgId?: string;
  id: string;
  code: string;
  reason: RegExp;
}> = [
  { name: "not JSON", data: "{nope", msgId: "m1", id: "m1", code: "invalid", reason: /^not JSON/ },
  { name: "JSON but not an object", data: "42", msgId: "m2", id: "m2", code: "invalid", reason: /expected object/i },
  { name: "missing type", data: JSON.stringify({ id: "c3", sessionId: S }), id: "c3", code: "invalid", reason: /type/ },
  {
    name: "unknown type",
    data: JSON.stringify({ type: "dance", id: "c4", sessionId: S }),
    id: "c4",
    code: "unsupported",
    reason: /dance/,
  },
  {
    name: "missing id (answered under the message id)",
    data: JSON.stringify({ type: "abort", sessionId: S }),
    msgId: "m5",
    id: "m5",
    code: "invalid",
    reason: /id/,
  },
  {
    name: "missing id and no message id (answered as seq:<n>)",
    data: JSON.stringify({ type: "abort", sessionId: S }),
    id: "seq:7",
    code: "invalid",
    reason: /id/,
  },
  {
    name: "wrong type of text",
    data: JSON.stringify({ type: "prompt", id: "c6", sessionId: S, text: 5 }),
    id: "c6",
    code: "invalid",
    reason: /text/,
  },
  {
    name: "prompt with neither text nor message",
    data: JSON.stringify({ type: "prompt", id: "c7", sessionId: S }),
    id: "c7",
    code: "invalid",
    reason: /exactly one/,
  },
  {
    name: "prompt with both text and message",
    data: JSON.stringify({
      type: "prompt",
      id: "c8",
      sessionId: S,
      text: "a",
      message: { role: "user", content: "b", timestamp: 1 },
    }),
    id: "c8",
    code: "invalid",
    reason: /exactly one/,
  },
  {
    name: "sessionId differs from the subject",
    data: JSON.stringify({ type: "abort", id: "c9", sessionId: "other-session" }),
    id: "c9",
    code: "invalid",
    reason: /differs/,
  },
  {
    name: "invalid thinking level",
    data: JSON.stringify({ type: "set_thinking_level", id: "c10", sessionId: S, level: "max" }),
    id: "c10",
    code: "invalid",
    reason: /level/,
  },
  {
    name: "label of an unknown entry",
    data: JSON.stringify({ type: "label", id: "c11", sessionId: S, targetId: "no-such-entry", label: "x" }),
    id: "c11",
    code: "not_found",
    reason: /no-such-entry/,
  },
  {
    name: "navigate to an unknown entry",
    data: JSON.stringify({ type: "navigate", id: "c12", sessionId: S, targetId: "no-such-entry" }),
    id: "c12",
    code: "not_found",
    reason: /no-such-entry/,
  },
  {
    name: "unknown active tool",
    data: JSON.stringify({ type: "set_active_tools", id: "c13", sessionId: S, toolNames: ["ghost"] }),
    id: "c13",
    code: "not_found",
    reason: /ghost/,
  },
  {
    name: "approve a call nobody waits for",
    data: JSON.stringify({ type: "approve_tool_call", id: "c14", sessionId: S, toolCallId: "toolu_x" }),
    id: "c14",
    code: "not_found",
    reason: /toolu_x/,
  },
  {
    name: "create an existing session",
    data: JSON.stringify({ type: "create_session", id: "c15", sessionId: S }),
    id: "c15",
    code: "conflict",
    reason: /already exists/,
  },
  {
    name: "compact a tiny session",
    data: JSON.stringify({ type: "compact", id: "c16", sessionId: S }),
    id: "c16",
    code: "conflict",
    reason: /compact/i,
  },
  {
    name: "image with a missing mimeType",
    data: JSON.stringify({
      type: "steer",
      id: "c17",
      sessionId: S,
      text: "a",
      images: [{ type: "image", data: "AAAA" }],
    }),
    id: "c17",
    code: "invalid",
    reason: /mimeType/,
  },
  {
    name: "bad model ref",
    data: JSON.stringify({ type: "set_model", id: "c18", sessionId: S, provider: "", modelId: "m" }),
    id: "c18",
    code: "invalid",
    reason: /provider/,
  },
  { name: "a NUL byte", data: "\u0000", msgId: "m19", id: "m19", code: "invalid", reason: /./ },
  {
    name: "invalid UTF-8",
    data: new Uint8Array([0xff, 0xfe, 0x00]),
    msgId: "m20",
    id: "m20",
    code: "invalid",
    reason: /UTF-8/,
  },
];

describe("session decider / bad commands off the wire", () => {
  for (const c of cases) {
    it(`${c.name}: ${c.code}`, () => {
      const outcome = given(...session).when(wire(c.data, c.msgId));
      outcome.thenRejected(c.code, c.reason);
      expect(outcome.events[0]).toMatchObject({ type: "command_rejected", commandId: c.id });
    });
  }

  it("a command over the size limit is invalid, naming the limit and its setting", () => {
    const big = JSON.stringify({ type: "steer", id: "c22", sessionId: S, text: "x".repeat(4_000) });
    const outcome = given(...session).when(
      commandInput({ data: bytes(big), commandRef: "c22", hasMsgId: true }, 2_048),
    );
    outcome.thenRejected(
      "invalid",
      `command is ${bytes(big).length} bytes; the limit is 2048 (FLEET_MAX_COMMAND_BYTES)`,
    );
  });

  it("a command whose event would not fit in a message is invalid (a body by reference may be of any size)", () => {
    const data = { blob: "x".repeat(1_100_000) };
    const big = JSON.stringify({ type: "append_custom", id: "c23", sessionId: S, customType: "big", data });
    const outcome = given(...session).when(commandInput({ data: bytes(big), commandRef: "c23", hasMsgId: true }, 4e6));
    outcome.thenRejected(
      "invalid",
      /^its custom event would be 1100\d{3} bytes; an event may be at most 1032192 \(text and image blocks over 32768 bytes go by reference and do not count\)$/,
    );
  });

  it("every command but create_session, prompt and import_session to an unknown session is not_found", () => {
    given()
      .when(wire(JSON.stringify({ type: "steer", id: "c21", sessionId: S, text: "hi" })))
      .thenRejected("not_found", `Session ${S} not found`);
  });
});
