// A scenario's steps served by the fake OpenAI server through a real provider StreamFn (pi-ai's), so the
// conformance scenarios run on a provider path as well as on the scripted provider.
import {
  type FakeOpenAI,
  type FakeOpenAIAnswer,
  type FakeOpenAIBlock,
  openAIReasoning,
  openAIReply,
  openAIText,
  openAIToolCall,
  splitIntoChunks,
} from "@fleet/testkit";
import { ScriptTurn, type ScriptTurnInput } from "../script.js";
import type { StreamFn } from "../types.js";
import type { ScenarioLlm, ScenarioOptions } from "./drivers.js";

/**
 * Fleet's LLM port for a scenario: each call scripts the fake with the next step (one delta per block,
 * or `chunkChars` pieces at the scripted rate; `error` as a stream error after the content), then
 * calls `streamFn` for `model`.
 */
export function servedByFakeOpenAI(
  fake: FakeOpenAI,
  streamFn: StreamFn,
  model: { provider: string; modelId: string },
): ScenarioLlm {
  return (steps, scripted) => {
    let next = 0;
    return (context, options, signal) => {
      const step = steps[next++];
      fake.script(step ? answerOf(step, scripted) : { type: "http_error", status: 500, message: "no more steps" });
      return streamFn(context, { ...options, model }, signal);
    };
  };
}

function answerOf(input: ScriptTurnInput, scripted: ScenarioOptions["scriptedOnBothSides"]): FakeOpenAIAnswer {
  const turn = ScriptTurn.parse(input);
  const content =
    turn.text === undefined ? turn.content : [...turn.content, { type: "text" as const, text: turn.text }];
  const pieces = (value: string) => {
    const split = scripted ? splitIntoChunks(value, scripted.chunkChars) : [];
    return split.length > 0 ? split : [value];
  };
  const blocks: FakeOpenAIBlock[] = content.map((b) =>
    b.type === "text"
      ? openAIText(b.text, pieces(b.text))
      : b.type === "thinking"
        ? openAIReasoning(b.thinking, pieces(b.thinking))
        : openAIToolCall(b.name, b.arguments, { id: b.id, deltas: pieces(JSON.stringify(b.arguments)) }),
  );
  const errorMessage = turn.errorMessage ?? turn.error;
  // Chat Completions chunks before the finish: the role chunk, one per delta, one more per tool call
  const events = 1 + blocks.reduce((n, b) => n + (b.type === "tool_call" ? 1 : 0) + (b.deltas?.length ?? 1), 0);
  const perChunkMs = scripted
    ? (Math.ceil(scripted.chunkChars / 4) / (turn.tokensPerSecond ?? scripted.tokensPerSecond)) * 1000
    : 0;
  return openAIReply(blocks, {
    ...(turn.stopReason === "length" ? { finishReason: "length" as const } : {}),
    ...(errorMessage !== undefined
      ? { errorAfterEvents: { events, code: "server_error", message: errorMessage } }
      : {}),
    ...(perChunkMs > 0 ? { eventDelayMs: perChunkMs } : {}),
  });
}
