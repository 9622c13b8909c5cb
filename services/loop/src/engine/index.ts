// Public surface of the loop engine (pi's agent loop as a pure core; README.md describes it).

export { EventSink, type EventSinkOptions } from "./event-sink.js";
export { createInProcessExecutor, type ToolHandler } from "./in-process-tools.js";
export { defaultConvertToLlm } from "./messages.js";
export { interruptedErrorMessage, type ResumePoint, resumePointFromCursor } from "./resume-point.js";
export {
  agentLoop,
  agentLoopContinue,
  agentLoopResume,
  type LoopOptions,
  type LoopResult,
} from "./run-agent-loop.js";
export {
  parseScript,
  Script,
  ScriptBlock,
  ScriptOptions,
  ScriptTurn,
  type ScriptTurnInput,
} from "./script.js";
export {
  createScriptedProvider,
  NO_MORE_STEPS,
  type ScriptedProvider,
  type ScriptedProviderOptions,
  type ScriptRequest,
  type ScriptStep,
  type Sleep,
  scriptedProviderFromScript,
} from "./scripted-provider.js";
export {
  continueRefusal,
  createSessionEngine,
  ENGINE_ERROR_TEXT,
  type PromptInput,
  type Rejection,
  type RunResult,
  SessionEngine,
  type SessionEngineOptions,
  type SessionEngineState,
} from "./session-engine.js";
export { STREAM_ENDED_EARLY } from "./stream-assistant.js";
export type {
  AfterToolCallContext,
  AfterToolCallResult,
  BeforeToolCallContext,
  BeforeToolCallResult,
  Emit,
  EndedTurn,
  EngineEvent,
  EngineHooks,
  EngineModel,
  EnginePorts,
  ExecuteTool,
  LlmContext,
  LoopConfig,
  LoopContext,
  LoopEventBody,
  NextTurnUpdate,
  StreamFn,
  StreamOptions,
  SummarizeCompaction,
  ToolCallRequest,
  ToolDefinition,
  ToolExecutionOutcome,
  ToolOutput,
  TurnContext,
} from "./types.js";
export { type ValidatedArguments, validateToolArguments } from "./validate-tool-arguments.js";
