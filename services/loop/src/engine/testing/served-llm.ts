// A scenario's steps served by a fake LLM server (OpenAI's or Anthropic's) through a real provider
// StreamFn, so the conformance scenarios run on provider paths as well as on the scripted provider.
import {
  type FakeAnthropic,
  type FakeBlock,
  type FakeOpenAI,
  type FakeOpenAIAnswer,
  type FakeOpenAIBlock,
  type FakeReply,
  fakeReply,
  fakeText,
  fakeThinking,
  fakeToolUse,
  openAIReasoning,
  openAIReply,
  openAIText,
  openAIToolCall,
  splitIntoChunks,
} from "@fleet/testkit";
import { ScriptTurn, type ScriptTurnInput } from "../script.js";
import type { StreamFn } from "../types.js";
import type { ScenarioLlm, ScenarioOptions } from "./drivers.js";

type Model = { provider: string; modelId: string };
type Scripted = ScenarioOptions["scriptedOnBothSides"];

/**
 * Fleet's LLM port for a scenario: each call scripts the fake with the next step (one delta per block,
 * or `chunkChars` pieces at the scripted rate; `error` as a stream error after the content), then
 * calls `streamFn` for `model`. Past the last step the fake answers `exhausted`.
 */
function served<A>(
  fake: { script(answer: A): void },
  answerOf: (step: ScriptTurnInput, scripted: Scripted) => A,
  exhausted: A,
  streamFn: StreamFn,
  model: Model,
): ScenarioLlm {
  return (steps, scripted) => {
    let next = 0;
    return (context, options, signal) => {
      const step = steps[next++];
      fake.script(step ? answerOf(step, scripted) : exhausted);
      return streamFn(context, { ...options, model }, signal);
    };
  };
}

/** The steps on the fake OpenAI server (Chat Completions chunks or Responses events, as requested). */
export function servedByFakeOpenAI(fake: FakeOpenAI, streamFn: StreamFn, model: Model): ScenarioLlm {
  const exhausted: FakeOpenAIAnswer = { type: "http_error", status: 500, message: "no more steps" };
  return served(fake, answerOf, exhausted, streamFn, model);
}

/** The `errorType` of a scripted error on the Anthropic path; Fleet's client words it `<type>: <message>`. */
export const SERVED_ANTHROPIC_ERROR_TYPE = "api_error";

/** The steps on the fake Anthropic server (thinking blocks get a fixed signature). */
export function servedByFakeAnthropic(fake: FakeAnthropic, streamFn: StreamFn, model: Model): ScenarioLlm {
  const exhausted: FakeReply = { type: "http_error", status: 500, errorType: "api_error", message: "no more steps" };
  return served(fake, anthropicAnswerOf, exhausted, streamFn, model);
}

function anthropicAnswerOf(input: ScriptTurnInput, scripted: Scripted) {
  const { turn, content, pieces, perChunkMs } = stepParts(input, scripted);
  const blocks: FakeBlock[] = content.map((b) =>
    b.type === "text"
      ? fakeText(b.text, pieces(b.text))
      : b.type === "thinking"
        ? fakeThinking(b.thinking, "sig", pieces(b.thinking))
        : fakeToolUse(b.name, b.arguments, { id: b.id, deltas: pieces(JSON.stringify(b.arguments)) }),
  );
  const errorMessage = turn.errorMessage ?? turn.error;
  // SSE events before message_delta: message_start, ping, then per block its start, deltas (a thinking
  // block's signature one more) and stop
  const perBlock = (b: FakeBlock) =>
    2 + ("deltas" in b ? (b.deltas?.length ?? 0) : 0) + (b.type === "thinking" ? 1 : 0);
  const events = 2 + blocks.reduce((n, b) => n + perBlock(b), 0);
  return fakeReply(blocks, {
    ...(turn.stopReason === "length" ? { stopReason: "max_tokens" as const } : {}),
    ...(errorMessage !== undefined
      ? { errorAfterEvents: { events, errorType: SERVED_ANTHROPIC_ERROR_TYPE, message: errorMessage } }
      : {}),
    ...(perChunkMs > 0 ? { eventDelayMs: perChunkMs } : {}),
  });
}

/** A step's content (its `text` last), how its values are split, and the pause per chunk. */
function stepParts(input: ScriptTurnInput, scripted: Scripted) {
  const turn = ScriptTurn.parse(input);
  const content =
    turn.text === undefined ? turn.content : [...turn.content, { type: "text" as const, text: turn.text }];
  const pieces = (value: string) => {
    const split = scripted ? splitIntoChunks(value, scripted.chunkChars) : [];
    return split.length > 0 ? split : [value];
  };
  const perChunkMs = scripted
    ? (Math.ceil(scripted.chunkChars / 4) / (turn.tokensPerSecond ?? scripted.tokensPerSecond)) * 1000
    : 0;
  return { turn, content, pieces, perChunkMs };
}

function answerOf(input: ScriptTurnInput, scripted: Scripted): FakeOpenAIAnswer {
  const { turn, content, pieces, perChunkMs } = stepParts(input, scripted);
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
  return openAIReply(blocks, {
    ...(turn.stopReason === "length" ? { finishReason: "length" as const } : {}),
    ...(errorMessage !== undefined
      ? { errorAfterEvents: { events, code: "server_error", message: errorMessage } }
      : {}),
    ...(perChunkMs > 0 ? { eventDelayMs: perChunkMs } : {}),
  });
}
