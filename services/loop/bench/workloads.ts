// The scripted LLM turns the benches replay: bench:engine's two workloads and bench:loop's prompt.
import { type SessionConfig, sessionConfigWith } from "@fleet/protocol";
import type { ScriptTurnInput } from "../src/engine/script.js";
import type { ToolDefinition } from "../src/engine/types.js";

export const usage = {
  input: 10,
  output: 5,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 15,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

/** bench:engine's session config. */
export const engineConfig: SessionConfig = sessionConfigWith({
  model: { provider: "scripted", modelId: "scripted-1" },
  systemPrompt: "You are a benchmark.",
});

export const echoParameters = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };
export const echo: ToolDefinition = { name: "echo", description: "Echoes its text", parameters: echoParameters };
export const echoResult = (text: string) => ({
  content: [{ type: "text" as const, text }],
  details: { length: text.length },
});

/** Workload A's turn (and B's last): one text response. */
export const textTurn: ScriptTurnInput = { text: "Hello! How can I help?", usage };
/** Workload B's first turn: three parallel echo calls. */
export const toolTurn: ScriptTurnInput = {
  content: [1, 2, 3].map((n) => ({
    type: "toolCall" as const,
    id: `call_${n}`,
    name: "echo",
    arguments: { text: `arg ${n}` },
  })),
  usage,
};

/** Text deltas per LLM turn of bench:loop's prompt (the provider streams 4 characters a chunk). */
export const LOOP_DELTAS = 64;
export const LOOP_CHUNK_CHARS = 4;
const LOOP_TEXT = "abcd".repeat(LOOP_DELTAS);

/** bench:loop's LLM turn `k`: LOOP_DELTAS chunks of text; even turns (0, 2, …) also call `ls`. */
export const loopTurn = (k: number): ScriptTurnInput =>
  k % 2 === 0
    ? {
        content: [
          { type: "text", text: LOOP_TEXT },
          { type: "toolCall", id: `ls-${k}`, name: "ls", arguments: { path: "." } },
        ],
      }
    : { text: LOOP_TEXT };

export const lsTool: ToolDefinition = { name: "ls", description: "ls", parameters: { type: "object", properties: {} } };
export const lsResult = () => ({ content: [{ type: "text" as const, text: "a\nb\nc" }] });
