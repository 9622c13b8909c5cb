import { describe, expect, it } from "vitest";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  textOf,
  toolCall,
  toolResultMessage,
  userMessage,
} from "../fixtures/builders.js";
import {
  decodeCommand,
  decodeEvent,
  decoderFor,
  decodeToolCallRequest,
  decodeToolRegistration,
  decodeToolResultRecord,
  encodeBuiltEvent,
  encodeCommand,
  encodeEvent,
  encoderFor,
  encodeToolCallRequest,
  encodeToolRegistration,
  encodeToolResultRecord,
  parseJson,
} from "./codec.js";
import { COMMAND_TYPES, type FleetCommand, type FleetCommandType } from "./commands.js";
import { FleetEvent, type FleetEventType } from "./events.js";
import { MAX_MESSAGE_BYTES } from "./size-limits.js";
import { STORE_OPS, type StoreOp, StoreReply, StoreRequest } from "./store-queries.js";
import type { ToolCallRequest, ToolRegistration, ToolResultRecord } from "./tool-records.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const call = toolCall("toolu_1", "read", { path: "a.txt" });
const assistant = assistantMessage([textOf("ok"), call]);
const result = toolResultMessage("toolu_1", "read", "text");

function eventSamples(): Record<FleetEventType, FleetEvent> {
  const log = createLogBuilder(1);
  const user = userMessage("hi");
  const execResult = { content: [textOf("text")], details: { lines: 1 }, terminate: false };
  const samples: Partial<Record<FleetEventType, FleetEvent>> = {};
  const add = (event: FleetEvent) => {
    samples[event.type] = event;
  };
  add(log.add({ type: "session_created", config: CONFIG, forkedFrom: { sessionId: "s-0", entryId: "e-1" } }));
  add(log.add({ type: "command_accepted", commandId: "c-1", commandType: "prompt" }));
  add(log.add({ type: "agent_start" }));
  add(log.add({ type: "turn_start" }));
  add(log.add({ type: "message_start", message: user }));
  add(
    log.add({
      type: "message_update",
      deltas: [
        { type: "text_start", contentIndex: 0 },
        { type: "text_delta", contentIndex: 0, delta: "o" },
        { type: "text_end", contentIndex: 0, content: "ok" },
        { type: "thinking_start", contentIndex: 1 },
        { type: "thinking_delta", contentIndex: 1, delta: "t" },
        { type: "thinking_end", contentIndex: 1, content: "t", thinkingSignature: "sig" },
        { type: "toolcall_start", contentIndex: 2, id: "toolu_1", name: "read" },
        { type: "toolcall_delta", contentIndex: 2, delta: '{"path":"a.txt"}' },
        { type: "toolcall_end", contentIndex: 2, toolCall: call },
      ],
    }),
  );
  add(log.add({ type: "message_end", message: assistant }));
  add(log.add({ type: "tool_execution_start", toolCallId: "toolu_1", toolName: "read", args: { path: "a.txt" } }));
  add(
    log.add({
      type: "tool_execution_update",
      toolCallId: "toolu_1",
      toolName: "read",
      args: { path: "a.txt" },
      partialResult: { content: [textOf("te")] },
    }),
  );
  add(
    log.add({
      type: "tool_execution_end",
      toolCallId: "toolu_1",
      toolName: "read",
      result: execResult,
      isError: false,
    }),
  );
  add(log.add({ type: "turn_end", message: assistant, toolResults: [result] }));
  add(log.add({ type: "agent_end", messages: [user, assistant, result] }));
  add(
    log.add({
      type: "command_rejected",
      commandId: "c-2",
      commandType: "prompt",
      code: "busy",
      reason: "a run is active",
    }),
  );
  add(log.add({ type: "queue_update", steer: [user], followUp: [], nextTurn: [user] }));
  add(log.add({ type: "model_change", provider: "openai", modelId: "gpt-5" }));
  add(log.add({ type: "thinking_level_change", thinkingLevel: "xhigh" }));
  add(log.add({ type: "active_tools_change", toolNames: ["read", "bash"] }));
  add(
    log.add({
      type: "compaction",
      summary: "## Goal",
      firstKeptEntryId: "e-1",
      tokensBefore: 12_345,
      details: { readFiles: ["a"], modifiedFiles: [] },
    }),
  );
  add(log.add({ type: "branch_summary", fromId: "root", summary: "went elsewhere" }));
  add(log.add({ type: "label", targetId: "e-1", label: null }));
  add(log.add({ type: "session_info", name: "Demo" }));
  add(log.add({ type: "custom", customType: "ext.state", data: { nested: [1, "two", null] } }));
  add(log.add({ type: "leaf", targetId: null }));
  add(log.add({ type: "owner_change", workerId: "loop-b", partition: 3, epoch: 7 }));
  add(log.add({ type: "run_resumed", runId: "run-1-1", reason: "owner changed" }));
  add(log.add({ type: "tool_approval_requested", toolCallId: "toolu_1", toolName: "bash", args: { command: "rm x" } }));
  add(log.add({ type: "tool_approval_resolved", toolCallId: "toolu_1", approved: false, reason: "not on prod" }));
  add(log.add({ type: "config_change", systemPrompt: "be brief", steeringMode: "all" }));
  add(
    log.add({
      type: "hook_decision",
      hook: "transform_context",
      server: "redact",
      inputHash: "a".repeat(64),
      turn: 1,
      output: { messages: [] },
    }),
  );
  add(log.add({ type: "budget_change", budget: { run: { outputTokens: 1000 }, session: { costUsd: 2.5 } } }));
  add(
    log.add({
      type: "agent_change",
      agent: { name: "support", version: 3 },
      systemPrompt: "You answer support tickets.",
      budget: { run: { costUsd: 1 } },
      approvalRules: [{ tool: "bash", action: "ask" }],
    }),
  );
  add(
    log.add({
      type: "approval_rules_set",
      rules: [{ tool: "bash", args: { pointer: "/command", regex: "^rm " }, action: "ask", expiresInMs: 60_000 }],
    }),
  );
  add(
    log.add({
      type: "tool_approval_requested",
      toolCallId: "toolu_2",
      toolName: "bash",
      args: { command: "rm y" },
      rule: { scope: "session", index: 0 },
      expiresAt: 1_700_000_060_000,
    }),
  );
  add(log.add({ type: "tool_approval_resolved", toolCallId: "toolu_2", approved: false, outcome: "expired" }));
  add(
    log.add({
      type: "pending_write",
      commandId: "cmd-7",
      write: { type: "model_change", provider: "anthropic", modelId: "claude-opus-4-5" },
      eventId: "0193a001-0000-7000-8000-0000000000ff",
    }),
  );
  add(log.add({ type: "compaction_start", reason: "threshold" }));
  add(log.add({ type: "compaction_end", reason: "overflow", aborted: false, willRetry: true }));
  const archive = { store: "object_store" as const, location: "fleet_archive/sessions/s-1/events.jsonl" };
  add(
    log.add({
      type: "session_deleting",
      op: "archive",
      by: "ops@host",
      events: 42,
      spend: [{ day: "2025-11-29", inputTokens: 10, outputTokens: 5, totalTokens: 15, costUsd: 0.01 }],
      archive,
    }),
  );
  add(log.add({ type: "session_restoring", by: "ops@host", archive }));
  add(log.add({ type: "session_restored", archive, events: 42 }));
  return samples as Record<FleetEventType, FleetEvent>;
}

const envelope = { sessionId: "s-1", ts: 1_764_450_000_000 };
const COMMAND_SAMPLES: Record<FleetCommandType, FleetCommand> = {
  create_session: {
    type: "create_session",
    id: "c-1",
    ...envelope,
    config: { model: CONFIG.model, activeTools: null },
    forkFrom: { sessionId: "s-0", entryId: "e-1" },
  },
  prompt: {
    type: "prompt",
    id: "c-2",
    ...envelope,
    text: "Build a web app",
    images: [{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }],
  },
  steer: { type: "steer", id: "c-3", ...envelope, message: userMessage("S1") },
  follow_up: {
    type: "follow_up",
    id: "c-4",
    ...envelope,
    message: { role: "custom", customType: "note", content: "F", display: true, timestamp: 1 },
  },
  next_turn: { type: "next_turn", id: "c-5", ...envelope, text: "later" },
  continue: { type: "continue", id: "c-6", sessionId: "s-1" },
  abort: { type: "abort", id: "c-7", ...envelope },
  set_model: { type: "set_model", id: "c-8", ...envelope, provider: "openai", modelId: "gpt-5" },
  set_thinking_level: { type: "set_thinking_level", id: "c-9", ...envelope, level: "minimal" },
  set_active_tools: { type: "set_active_tools", id: "c-10", ...envelope, toolNames: ["read"] },
  configure: { type: "configure", id: "c-11", ...envelope, systemPrompt: "Be brief.", toolExecution: "sequential" },
  compact: { type: "compact", id: "c-12", ...envelope, instructions: "focus on the API" },
  set_compaction_settings: { type: "set_compaction_settings", id: "c-21", ...envelope, reserveTokens: 8192 },
  navigate: { type: "navigate", id: "c-13", ...envelope, targetId: "e-1", summarize: true, label: "before" },
  label: { type: "label", id: "c-14", ...envelope, targetId: "e-1", label: "checkpoint" },
  set_name: { type: "set_name", id: "c-15", ...envelope, name: "Demo" },
  append_custom: { type: "append_custom", id: "c-16", ...envelope, customType: "ext", data: [1, 2] },
  append_message: {
    type: "append_message",
    id: "c-17",
    ...envelope,
    message: userMessage("note"),
    deliverAs: "nextTurn",
    triggerTurn: false,
  },
  approve_tool_call: { type: "approve_tool_call", id: "c-18", ...envelope, toolCallId: "toolu_1" },
  deny_tool_call: { type: "deny_tool_call", id: "c-19", ...envelope, toolCallId: "toolu_1", reason: "no" },
  replay: {
    type: "replay",
    id: "c-replay",
    sessionId: "s-2",
    replayOf: {
      sessionId: "s-1",
      fromEntry: "e-1",
      overrides: { model: { provider: "anthropic", modelId: "claude-haiku-4-5" }, thinkingLevel: "low" },
      toolsMode: "recorded",
    },
  },
  import_session: {
    type: "import_session",
    id: "c-20",
    ...envelope,
    entries: [
      { type: "message", id: "a1b2c3d4", parentId: null, timestamp: 1, message: userMessage("hi") },
      { type: "label", id: "a1b2c3d5", parentId: "a1b2c3d4", timestamp: 2, targetId: "a1b2c3d4", label: "x" },
    ],
    leafId: "a1b2c3d5",
  },
  set_budget: { type: "set_budget", id: "c-21", ...envelope, budget: { session: { totalTokens: 5000 } } },
  set_approval_rules: {
    type: "set_approval_rules",
    id: "c-40",
    ...envelope,
    rules: [{ tool: "bash", args: { pointer: "/command", regex: "^rm " }, action: "deny", reason: "no rm" }],
  },
  set_agent: { type: "set_agent", id: "c-41", ...envelope, agent: "support@3" },
  delete_session: { type: "delete_session", id: "c-22", ...envelope, by: "ops@host" },
  archive_session: { type: "archive_session", id: "c-23", ...envelope },
  restore_session: { type: "restore_session", id: "c-24", ...envelope, by: "gateway acme/operate" },
};

describe("codec / round trips", () => {
  const samples = eventSamples();

  it("has a sample for every event type and every command type", () => {
    expect(Object.keys(samples).sort()).toEqual(FleetEvent.options.map((o) => o.shape.type.value).sort());
    expect(Object.keys(COMMAND_SAMPLES).sort()).toEqual([...COMMAND_TYPES].sort());
  });

  for (const [type, event] of Object.entries(eventSamples())) {
    it(`event ${type}: encode → decode gives the same value (bytes and string input)`, () => {
      const encoded = encodeEvent(event);
      if (!encoded.ok) throw new Error(encoded.error);
      expect(decodeEvent(encoded.bytes)).toEqual({ ok: true, value: event });
      expect(decodeEvent(new TextDecoder().decode(encoded.bytes))).toEqual({ ok: true, value: event });
    });
    it(`event ${type}: encodeBuiltEvent writes the same bytes as encodeEvent`, () => {
      const built = encodeBuiltEvent(event);
      const checked = encodeEvent(event);
      if (!built.ok || !checked.ok) throw new Error("not encoded");
      expect(Buffer.from(built.bytes).equals(Buffer.from(checked.bytes))).toBe(true);
    });
  }

  for (const [type, command] of Object.entries(COMMAND_SAMPLES)) {
    it(`command ${type}: encode → decode gives the same value`, () => {
      const encoded = encodeCommand(command);
      if (!encoded.ok) throw new Error(encoded.error);
      expect(decodeCommand(encoded.bytes)).toEqual({ ok: true, value: command });
    });
  }

  it("tool call requests, result records and registrations round-trip", () => {
    const request: ToolCallRequest = {
      sessionId: "s-1",
      runId: "run-1",
      toolCallId: "toolu_1",
      toolName: "read",
      args: { path: "a.txt" },
      deadline: 1_764_450_180_000,
    };
    const records: ToolResultRecord[] = [
      { kind: "started", runnerId: "runner-1", ts: 5 },
      { kind: "update", partialResult: { content: [textOf("…")] } },
      { kind: "result", content: [textOf("done")], details: { n: 1 }, isError: false, terminate: true },
    ];
    const registration: ToolRegistration = {
      name: "read",
      description: "Read a file",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
      executionMode: "sequential",
      retry: "never",
      timeoutMs: 60_000,
      version: "2",
      runnerId: "runner-1",
      registeredAt: 1,
    };
    const r = encodeToolCallRequest(request);
    expect(r.ok && decodeToolCallRequest(r.bytes)).toEqual({ ok: true, value: request });
    for (const record of records) {
      const e = encodeToolResultRecord(record);
      expect(e.ok && decodeToolResultRecord(e.bytes)).toEqual({ ok: true, value: record });
    }
    const g = encodeToolRegistration(registration);
    expect(g.ok && decodeToolRegistration(g.bytes)).toEqual({ ok: true, value: registration });
  });

  it("a registration gets its defaults on decode", () => {
    expect(decodeToolRegistration('{"name":"ls","description":"List","parameters":{}}')).toEqual({
      ok: true,
      value: {
        name: "ls",
        description: "List",
        parameters: {},
        executionMode: "parallel",
        retry: "safe",
        timeoutMs: 180_000,
        version: "1",
      },
    });
  });

  const storeSamples: { [Op in StoreOp]: { request: unknown; reply: unknown } } = {
    get_context: {
      request: { sessionId: "s-1", leafId: null, minSeq: 10, timeoutMs: 5000 },
      reply: {
        ok: true,
        messages: [
          { role: "compactionSummary", summary: "s", tokensBefore: 10, timestamp: 1 },
          { role: "branchSummary", summary: "b", fromId: "root", timestamp: 2 },
          userMessage("hi"),
          assistant,
          result,
        ],
        model: CONFIG.model,
        thinkingLevel: "off",
        activeToolNames: null,
        leafId: "e-1",
        seq: 42,
      },
    },
    get_tree: {
      request: { sessionId: "s-1", minSeq: 3 },
      reply: {
        ok: true,
        entries: [{ type: "session_info", id: "e-1", parentId: null, timestamp: 1, name: "n" }],
        leafId: "e-1",
        labels: { "e-1": "x" },
        seq: 3,
      },
    },
    get_branch: {
      request: { sessionId: "s-1", leafId: "e-1" },
      reply: {
        ok: true,
        entries: [{ type: "custom", id: "e-1", parentId: null, timestamp: 1, customType: "c", data: 1 }],
      },
    },
    get_entry: {
      request: { sessionId: "s-1", entryId: "e-1" },
      reply: {
        ok: true,
        entry: { type: "model_change", id: "e-1", parentId: null, timestamp: 1, provider: "p", modelId: "m" },
      },
    },
    list_sessions: {
      request: { limit: 50, cursor: "abc" },
      reply: {
        ok: true,
        sessions: [{ sessionId: "s-1", name: null, status: "idle", updatedAt: 5, seq: 9 }],
        cursor: "def",
      },
    },
    export: { request: { sessionId: "s-1" }, reply: { ok: true, jsonl: '{"type":"session","version":3}\n' } },
    list_idle: {
      request: { before: 1_764_450_000_000, limit: 100, cursor: "abc" },
      reply: { ok: true, sessions: [{ sessionId: "s-1", name: "n", status: "idle", updatedAt: 5, seq: 9 }] },
    },
    list_running: {
      request: { limit: 20, cursor: "aXgtMQ" },
      reply: {
        ok: true,
        sessions: [
          { sessionId: "s-1", name: null, status: "running", updatedAt: 5, seq: 9, agent: { name: "a", version: 2 } },
        ],
      },
    },
    list_approvals: {
      request: { sessionId: "s-1" },
      reply: {
        ok: true,
        approvals: [
          { sessionId: "s-1", toolCallId: "c1", toolName: "write", args: { path: "a" }, seq: 7, requestedAt: 5 },
        ],
      },
    },
    search_sessions: {
      request: { q: "release", limit: 10 },
      reply: {
        ok: true,
        sessions: [{ sessionId: "s-1", name: "Release notes", status: "idle", updatedAt: 5, seq: 9 }],
        cursor: "abc",
      },
    },
    count_agent_sessions: {
      request: { name: "support" },
      reply: {
        ok: true,
        counts: [
          { name: "support", version: 1, sessions: 3 },
          { name: "support", version: 2, sessions: 1 },
        ],
      },
    },
  };

  for (const op of STORE_OPS) {
    it(`store ${op}: request, ok reply and error reply round-trip`, () => {
      const { request, reply } = storeSamples[op];
      const error = { ok: false, code: "not_found", error: "session s-1 not found" };
      const pairs: Array<[unknown, (typeof StoreRequest)[StoreOp] | (typeof StoreReply)[StoreOp]]> = [
        [request, StoreRequest[op]],
        [reply, StoreReply[op]],
        [error, StoreReply[op]],
      ];
      for (const [value, schema] of pairs) {
        const encoded = encoderFor(schema)(value as never);
        if (!encoded.ok) throw new Error(encoded.error);
        expect(decoderFor(schema)(encoded.bytes)).toEqual({ ok: true, value });
      }
    });
  }
});

/** The issues of a failed decode, as `path: message` strings. */
function issuesOf(decoded: { ok: boolean; issues?: Array<{ path: string; message: string }> }): string[] {
  if (decoded.ok) throw new Error("expected a failure");
  return (decoded.issues ?? []).map((i) => `${i.path}: ${i.message}`);
}

describe("codec / bad payloads", () => {
  const valid = eventSamples();
  const withChange = (type: FleetEventType, change: (e: Record<string, unknown>) => void) => {
    const copy = structuredClone(valid[type]) as unknown as Record<string, unknown>;
    change(copy);
    return JSON.stringify(copy);
  };
  const meta = (e: Record<string, unknown>) => e.meta as Record<string, unknown>;

  it("1. not JSON", () => {
    expect(issuesOf(decodeEvent("{"))).toEqual([": not JSON: Expected property name or '}' in JSON at position 1"]);
  });

  it("2. invalid UTF-8", () => {
    expect(decodeEvent(new Uint8Array([0x7b, 0xff, 0x7d]))).toEqual({
      ok: false,
      error: "payload is not valid UTF-8",
      issues: [{ path: "", message: "payload is not valid UTF-8" }],
    });
  });

  it("3. oversize input, before parsing", () => {
    const big = `"${"x".repeat(MAX_MESSAGE_BYTES)}"`;
    expect(issuesOf(decodeEvent(big))).toEqual([
      `: payload of ${MAX_MESSAGE_BYTES + 2} bytes exceeds the limit of ${MAX_MESSAGE_BYTES} bytes`,
    ]);
    expect(parseJson(bytes('{"a":1}'), 3)).toMatchObject({
      ok: false,
      error: "payload of 7 bytes exceeds the limit of 3 bytes",
    });
  });

  it("4. oversize output is refused by the encoder", () => {
    const event = structuredClone(valid.message_start) as FleetEvent & { message: { content: unknown } };
    event.message.content = "x".repeat(MAX_MESSAGE_BYTES);
    for (const encoded of [encodeEvent(event), encodeBuiltEvent(event)]) {
      expect(encoded.ok).toBe(false);
      expect(!encoded.ok && encoded.error).toMatch(/^encoded size \d+ bytes exceeds the limit of 1048576 bytes$/);
    }
  });

  it("5. a JSON value that is not an object", () => {
    expect(issuesOf(decodeEvent("42"))).toEqual([": Invalid input: expected object, received number"]);
  });

  it("6. missing meta", () => {
    expect(issuesOf(decodeEvent('{"type":"agent_start"}'))).toEqual([
      "meta: Invalid input: expected object, received undefined",
    ]);
  });

  it("7. unknown event type names the discriminator", () => {
    const issues = issuesOf(decodeEvent(withChange("agent_start", (e) => (e.type = "agent_begin"))));
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatch(/^type: Invalid discriminator value\. Expected 'agent_start' \| /);
  });

  it("8. session id with a dot", () => {
    expect(issuesOf(decodeEvent(withChange("agent_start", (e) => (meta(e).sessionId = "s.1"))))).toEqual([
      "meta.sessionId: must match ^[A-Za-z0-9_-]{1,128}$",
    ]);
  });

  it("9. wrong protocol version", () => {
    expect(issuesOf(decodeEvent(withChange("turn_start", (e) => (meta(e).v = 2))))).toEqual([
      "meta.v: Invalid input: expected 1",
    ]);
  });

  it("10. negative and fractional timestamps", () => {
    expect(issuesOf(decodeEvent(withChange("turn_start", (e) => (meta(e).ts = -1))))).toEqual([
      "meta.ts: Too small: expected number to be >=0",
    ]);
    expect(issuesOf(decodeEvent(withChange("turn_start", (e) => (meta(e).ts = 1.5))))).toEqual([
      "meta.ts: Invalid input: expected int, received number",
    ]);
  });

  it("11. an entry event without entry", () => {
    expect(issuesOf(decodeEvent(withChange("message_end", (e) => delete e.entry)))).toEqual([
      "entry: Invalid input: expected object, received undefined",
    ]);
  });

  it("12. a message_update with no deltas", () => {
    expect(issuesOf(decodeEvent(withChange("message_update", (e) => (e.deltas = []))))).toEqual([
      "deltas: Too small: expected array to have >=1 items",
    ]);
  });

  it("13. a wrongly typed field deep inside a message", () => {
    const payload = withChange("message_end", (e) => {
      ((e.message as { content: Array<Record<string, unknown>> }).content[0] as Record<string, unknown>).text = 7;
    });
    expect(issuesOf(decodeEvent(payload))).toEqual([
      "message.content.0.text: Invalid input: expected string, received number",
    ]);
  });

  it("14. an unknown stop reason", () => {
    const payload = withChange("turn_end", (e) => ((e.message as Record<string, unknown>).stopReason = "done"));
    expect(issuesOf(decodeEvent(payload))).toEqual([
      'message.stopReason: Invalid option: expected one of "stop"|"length"|"toolUse"|"error"|"aborted"',
    ]);
  });

  it("15. a delta with a negative content index", () => {
    const payload = withChange("message_update", (e) => {
      (e.deltas as Array<Record<string, unknown>>)[1] = { type: "text_delta", contentIndex: -1, delta: "x" };
    });
    expect(issuesOf(decodeEvent(payload))).toEqual(["deltas.1.contentIndex: Too small: expected number to be >=0"]);
  });

  it("16. every issue is reported, not only the first", () => {
    const payload = withChange("tool_execution_end", (e) => {
      e.isError = "no";
      e.toolCallId = "";
    });
    expect(issuesOf(decodeEvent(payload))).toEqual([
      "toolCallId: Too small: expected string to have >=1 characters",
      "isError: Invalid input: expected boolean, received string",
    ]);
  });

  it("17. an unknown command type is unsupported, with the envelope kept for the rejection", () => {
    expect(decodeCommand('{"type":"dance","id":"c-1","sessionId":"s-1"}')).toEqual({
      ok: false,
      code: "unsupported",
      error: 'unsupported command type "dance"',
      issues: [{ path: "type", message: 'unsupported command type "dance"' }],
      commandId: "c-1",
      commandType: "dance",
    });
  });

  it("18. a prompt with both text and message, or with neither, is invalid", () => {
    const both = { ...COMMAND_SAMPLES.prompt, message: userMessage("x") };
    const decodedBoth = decodeCommand(JSON.stringify(both));
    expect(decodedBoth).toMatchObject({ ok: false, code: "invalid", commandId: "c-2", commandType: "prompt" });
    expect(!decodedBoth.ok && decodedBoth.error).toBe("exactly one of `text` and `message` is required");
    const neither = decodeCommand('{"type":"steer","id":"c-3","sessionId":"s-1"}');
    expect(!neither.ok && neither.error).toBe("exactly one of `text` and `message` is required");
  });

  it("19. a command whose session id has a dot", () => {
    const decoded = decodeCommand('{"type":"prompt","id":"c-1","sessionId":"a.b","text":"x"}');
    expect(decoded).toMatchObject({ ok: false, code: "invalid", commandId: "c-1", commandType: "prompt" });
    expect(issuesOf(decoded)).toEqual(["sessionId: must match ^[A-Za-z0-9_-]{1,128}$"]);
  });

  it("20. commands that are not JSON objects are invalid with type unknown", () => {
    for (const payload of ["{oops", "null", "[1,2]", '"prompt"']) {
      const decoded = decodeCommand(payload);
      expect(decoded).toMatchObject({ ok: false, code: "invalid", commandType: "unknown" });
      expect(!decoded.ok && decoded.commandId).toBeUndefined();
    }
    expect(decodeCommand(new Uint8Array([0xc3, 0x28]))).toMatchObject({
      ok: false,
      code: "invalid",
      error: "payload is not valid UTF-8",
    });
  });

  it("21. a command with an empty id", () => {
    const decoded = decodeCommand('{"type":"abort","id":"","sessionId":"s-1"}');
    expect(decoded).toMatchObject({ ok: false, code: "invalid", commandType: "abort" });
    expect(issuesOf(decoded)).toEqual(["id: Too small: expected string to have >=1 characters"]);
  });

  it("22. an out-of-range enum in a command", () => {
    const decoded = decodeCommand('{"type":"set_thinking_level","id":"c-1","sessionId":"s-1","level":"extreme"}');
    expect(issuesOf(decoded)).toEqual([
      'level: Invalid option: expected one of "off"|"minimal"|"low"|"medium"|"high"|"xhigh"',
    ]);
  });

  it("23. an imported session with a bad entry names the entry", () => {
    const decoded = decodeCommand(
      JSON.stringify({ type: "import_session", id: "c-1", sessionId: "s-1", entries: [{ type: "message", id: "e" }] }),
    );
    expect(issuesOf(decoded)).toEqual([
      "entries.0.parentId: Invalid input: expected string, received undefined",
      "entries.0.timestamp: Invalid input: expected number, received undefined",
      "entries.0.message: Invalid input: expected object, received undefined",
    ]);
  });

  it("24. a tool call id that is not a subject token", () => {
    const decoded = decodeToolCallRequest(
      JSON.stringify({ sessionId: "s-1", runId: "r", toolCallId: "a.b", toolName: "read", args: {}, deadline: 1 }),
    );
    expect(issuesOf(decoded)).toEqual(["toolCallId: must match ^[A-Za-z0-9_-]{1,128}$"]);
  });

  it("25. a tool result record of an unknown kind", () => {
    const issues = issuesOf(decodeToolResultRecord('{"kind":"done"}'));
    expect(issues).toEqual(["kind: Invalid discriminator value. Expected 'started' | 'update' | 'result'"]);
  });

  it("26. a tool registration with a bad name and a zero timeout", () => {
    const issues = issuesOf(
      decodeToolRegistration(JSON.stringify({ name: "my tool", description: "", parameters: {}, timeoutMs: 0 })),
    );
    expect(issues).toEqual([
      "name: must match ^[A-Za-z0-9_-]{1,64}$",
      "timeoutMs: Too small: expected number to be >0",
    ]);
  });

  it("27. a store request over its limits", () => {
    const decoded = decoderFor(StoreRequest.get_context)('{"sessionId":"s-1","timeoutMs":60000}');
    expect(issuesOf(decoded)).toEqual(["timeoutMs: Too big: expected number to be <=30000"]);
    expect(issuesOf(decoderFor(StoreRequest.list_sessions)('{"limit":0}'))).toEqual([
      "limit: Too small: expected number to be >0",
    ]);
  });

  it("28. encoders validate too, and never throw", () => {
    const encoded = encodeCommand({ type: "set_name", id: "c-1", sessionId: "s-1", name: "x".repeat(513) });
    expect(encoded).toEqual({
      ok: false,
      error: "name: Too big: expected string to have <=512 characters",
      issues: [{ path: "name", message: "Too big: expected string to have <=512 characters" }],
    });
  });
});

describe("encoding a value nested past the call stack", () => {
  it("is an error, not a thrown RangeError", () => {
    let data: unknown = {};
    for (let i = 0; i < 200_000; i++) data = { d: data };
    const encoded = encodeCommand({
      id: "c-deep",
      sessionId: "s-deep",
      type: "append_custom",
      customType: "x",
      data,
    } as never);
    expect(encoded.ok).toBe(false);
    if (!encoded.ok) expect(encoded.error).toMatch(/^cannot encode the value: Maximum call stack size exceeded/);
  });
});
