// Hand-built logs for the checker tests: well-formed prompt runs that call bash and write, as the
// chaos workload's runs do. Tests break them one way at a time.
import type { FleetEvent } from "@fleet/protocol";
import {
  assistantMessage,
  createLogBuilder,
  type LogBuilder,
  textOf,
  toolCall,
  toolResultMessage,
  userMessage,
} from "@fleet/protocol/testing";
import type { SessionLog } from "./types.js";

export const SID = "s-1";

/** command_accepted, then a run: user prompt, assistant with bash + write calls, both results, final text. */
export function addPromptRun(log: LogBuilder, commandId: string, n: number): void {
  const bash = `call-${n}-b`;
  const write = `call-${n}-w`;
  log.add({ type: "command_accepted", commandId, commandType: "prompt" });
  log.add({ type: "agent_start" });
  log.add({ type: "turn_start" });
  log.add({ type: "message_start", message: userMessage(`prompt ${n}`) });
  log.add({ type: "message_end", message: userMessage(`prompt ${n}`) });
  const calls = assistantMessage([
    toolCall(bash, "bash", { command: "echo" }),
    toolCall(write, "write", { path: "f" }),
  ]);
  log.add({ type: "message_start", message: calls });
  log.add({ type: "message_end", message: calls });
  const results = [toolResultMessage(bash, "bash", "ok"), toolResultMessage(write, "write", "ok")];
  for (const r of results) {
    log.add({ type: "tool_execution_start", toolCallId: r.toolCallId, toolName: r.toolName, args: {} });
    log.add({
      type: "tool_execution_end",
      toolCallId: r.toolCallId,
      toolName: r.toolName,
      result: { content: r.content },
      isError: false,
    });
    log.add({ type: "message_start", message: r });
    log.add({ type: "message_end", message: r });
  }
  log.add({ type: "turn_end", message: calls, toolResults: results });
  log.add({ type: "turn_start" });
  const final = assistantMessage([textOf(`done ${n}`)]);
  log.add({ type: "message_start", message: final });
  log.add({ type: "message_end", message: final });
  log.add({ type: "turn_end", message: final, toolResults: [] });
  log.add({ type: "agent_end", messages: [] });
}

/** A session with `prompts` complete runs (command ids `c1`, `c2`, …). */
export function sampleLog(prompts = 2): { log: SessionLog; builder: LogBuilder } {
  const builder = createLogBuilder(1, SID);
  for (let n = 1; n <= prompts; n++) addPromptRun(builder, `c${n}`, n);
  return { log: { sessionId: SID, events: builder.events, invalid: 0 }, builder };
}

export const withEvents = (events: readonly FleetEvent[]): SessionLog => ({ sessionId: SID, events, invalid: 0 });
