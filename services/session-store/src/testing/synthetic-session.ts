// Deterministic synthetic session logs for tests and the benchmark: what the loop would write, with
// branches, compactions, labels, leaf moves and settings changes. Ids and time come from the options.
import {
  type AgentMessage,
  type EventBody,
  type FleetEvent,
  type SessionConfig,
  sessionConfigWith,
} from "@fleet/protocol";

export interface SyntheticOptions {
  sessionId: string;
  seed: number;
  /** Agent runs (prompt → reply, sometimes with a tool call). */
  runs: number;
  startTs?: number;
  /** Text length of user and assistant messages. */
  textChars?: number;
  /** Probabilities per run of each tree operation. */
  branchRate?: number;
  compactionRate?: number;
  labelRate?: number;
  settingsRate?: number;
  toolRate?: number;
  /** Include the streaming events (message_start/update, tool_execution_*) the store ignores. */
  streaming?: boolean;
}

/** mulberry32: a small deterministic PRNG. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const SYNTHETIC_CONFIG: SessionConfig = sessionConfigWith({
  model: { provider: "anthropic", modelId: "claude-sonnet-5" },
  systemPrompt: "You are a synthetic assistant.",
});

const usage = {
  input: 10,
  output: 20,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 30,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

/** Yields one session's events in log order. */
export function* syntheticSession(opts: SyntheticOptions): Generator<FleetEvent> {
  const rnd = prng(opts.seed);
  const sid = opts.sessionId;
  const chars = opts.textChars ?? 40;
  let ts = opts.startTs ?? 1_764_450_000_000;
  let n = 0;
  let leaf: string | null = null;
  const parent = new Map<string, string | null>();
  const entryIds: string[] = [];
  const messageIds: string[] = [];
  const provider = "anthropic";
  let modelId = "claude-sonnet-5";
  const text = (tag: string) => `${tag} ${"x".repeat(Math.max(0, chars - tag.length - 1))}`;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const path = (): string[] => {
    const out: string[] = [];
    for (let cur = leaf; cur !== null; cur = parent.get(cur) ?? null) out.push(cur);
    return out.reverse();
  };

  const make = (body: EventBody, runId?: string): FleetEvent => {
    n++;
    ts += 1 + Math.floor(rnd() * 5);
    const id = `${sid}-e${n}`;
    const meta = { v: 1 as const, id, sessionId: sid, ts, producer: "synthetic", ...(runId ? { runId } : {}) };
    if ("entry" in body) {
      const entry = { id, parentId: leaf };
      parent.set(id, leaf);
      entryIds.push(id);
      leaf = id;
      return { ...body, entry, meta } as FleetEvent;
    }
    return { ...body, meta } as FleetEvent;
  };
  const entryBody = <B extends Record<string, unknown>>(b: B) => ({ ...b, entry: { id: "", parentId: null } });
  const messageEnd = (message: AgentMessage, runId: string) => {
    const e = make(entryBody({ type: "message_end", message }) as EventBody, runId);
    if (message.role !== "custom") messageIds.push(e.meta.id);
    return e;
  };

  yield make({ type: "session_created", config: SYNTHETIC_CONFIG });
  for (let run = 0; run < opts.runs; run++) {
    const runId = `${sid}-r${run}`;
    yield make({ type: "command_accepted", commandId: `${sid}-c${run}`, commandType: "prompt" });

    // Tree operations between runs.
    if (run > 1 && rnd() < (opts.branchRate ?? 0.1) && messageIds.length > 2) {
      const target = pick(messageIds.slice(0, -1));
      yield make({ type: "leaf", targetId: target });
      leaf = target;
      if (rnd() < 0.5)
        yield make(entryBody({ type: "branch_summary", fromId: target, summary: text("summary") }) as EventBody);
    }
    if (run > 3 && rnd() < (opts.compactionRate ?? 0.05)) {
      const onPath = path().filter((id) => messageIds.includes(id));
      if (onPath.length > 2) {
        const kept = onPath[Math.floor(onPath.length / 2)] as string;
        yield make(
          entryBody({
            type: "compaction",
            summary: text("compacted"),
            firstKeptEntryId: kept,
            tokensBefore: 1000 + run,
            details: { readFiles: [], modifiedFiles: [] },
          }) as EventBody,
        );
      }
    }
    if (run > 0 && rnd() < (opts.labelRate ?? 0.1)) {
      yield make(
        entryBody({ type: "label", targetId: pick(entryIds), label: rnd() < 0.3 ? null : `l${run}` }) as EventBody,
      );
    }
    if (rnd() < (opts.settingsRate ?? 0.05)) {
      const r = rnd();
      if (r < 0.3) {
        modelId = `model-${run}`;
        yield make(entryBody({ type: "model_change", provider, modelId }) as EventBody);
      } else if (r < 0.55) {
        yield make(
          entryBody({ type: "thinking_level_change", thinkingLevel: pick(["off", "low", "high"]) }) as EventBody,
        );
      } else if (r < 0.7) {
        yield make(entryBody({ type: "active_tools_change", toolNames: ["read", "bash"] }) as EventBody);
      } else if (r < 0.85) {
        yield make(entryBody({ type: "session_info", name: ` name ${run} ` }) as EventBody);
      } else {
        yield make(entryBody({ type: "custom", customType: "ext", data: { run } }) as EventBody);
      }
    }

    yield make({ type: "agent_start" }, runId);
    yield make({ type: "turn_start" }, runId);
    const user: AgentMessage =
      rnd() < 0.05
        ? { role: "custom", customType: "note", content: text("note"), display: true, timestamp: ts }
        : { role: "user", content: [{ type: "text", text: text(`u${run}`) }], timestamp: ts };
    if (opts.streaming) yield make({ type: "message_start", message: user }, runId);
    yield messageEnd(user, runId);
    const withTool = rnd() < (opts.toolRate ?? 0.3);
    const assistant: AgentMessage = {
      role: "assistant",
      content: withTool
        ? [{ type: "toolCall", id: `call${run}`, name: "read", arguments: { path: "a.txt" } }]
        : [{ type: "text", text: text(`a${run}`) }],
      api: "anthropic-messages",
      provider,
      model: modelId,
      usage,
      stopReason: withTool ? "toolUse" : "stop",
      timestamp: ts,
    };
    if (opts.streaming) {
      yield make({ type: "message_start", message: { ...assistant, content: [] } }, runId);
      yield make(
        { type: "message_update", deltas: [{ type: "text_delta", contentIndex: 0, delta: "x" }] } as EventBody,
        runId,
      );
    }
    yield messageEnd(assistant, runId);
    if (withTool) {
      if (opts.streaming) {
        yield make(
          { type: "tool_execution_start", toolCallId: `call${run}`, toolName: "read", args: { path: "a.txt" } },
          runId,
        );
      }
      const result: AgentMessage = {
        role: "toolResult",
        toolCallId: `call${run}`,
        toolName: "read",
        content: [{ type: "text", text: text("file") }],
        isError: false,
        timestamp: ts,
      };
      yield messageEnd(result, runId);
    }
    yield make({ type: "agent_end", messages: [] }, runId);
  }
}

/** All events of one session as an array. */
export const syntheticEvents = (opts: SyntheticOptions): FleetEvent[] => [...syntheticSession(opts)];
