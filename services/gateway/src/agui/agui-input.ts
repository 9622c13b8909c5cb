// `POST /v1/agui`'s body, AG-UI's RunAgentInput, and the Fleet commands it asks for (pure).
import type { ResumeEntry, RunAgentInput } from "@ag-ui/core";
import { RunAgentInputSchema } from "@ag-ui/core/schemas";
import type { CommandBody } from "@fleet/client";
import { isToolCallId, SessionId } from "@fleet/protocol";
import { z } from "zod";
import { type ApiError, apiError } from "../http/api-error.js";
import { AGUI_COMMAND_PREFIX } from "./agui-projection.js";

/** A run id fits a command id (`agui.<k>.<runId>`, at most 128 characters) and a NATS header. */
const RUN_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,100}$/;

/**
 * AG-UI's own RunAgentInput schema (open objects, as the protocol defines them), with `threadId` a
 * Fleet session id and `runId` at most 100 characters of `[A-Za-z0-9_.:-]`.
 */
export const AguiRunInput = RunAgentInputSchema.extend({
  threadId: SessionId,
  runId: z.string().regex(RUN_ID_PATTERN, "must match ^[A-Za-z0-9_.:-]{1,100}$"),
});

/** What a resume entry answering a tool approval carries. */
const ApprovalAnswer = z.object({ approved: z.boolean(), reason: z.string().max(4096).optional() }).strict();

/**
 * The commands a run input asks for, in order. Without `resume`: the new user message (the last of
 * `messages`, which must be the user's) as a `prompt`. With `resume`: one decision per entry, on the
 * tool call its `interruptId` names: `resolved` with payload `{approved: true}` approves,
 * `{approved: false, reason?}` denies, `cancelled` denies. Whether the call waits for a decision is
 * the log's to say (the loop refuses a decision on a call that does not, `not_found`), so a run
 * sent again with the same `runId` answers what it answered the first time.
 */
export function commandsOfInput(input: RunAgentInput): CommandBody[] | ApiError {
  if (input.resume && input.resume.length > 0) {
    const commands: CommandBody[] = [];
    for (const entry of input.resume) {
      const decision = decisionOf(entry);
      if ("status" in decision) return decision;
      commands.push(decision);
    }
    return commands;
  }
  const last = input.messages.at(-1);
  if (last?.role !== "user") {
    return apiError(400, "invalid", "body: the last message must be the user's new message (or give `resume`)");
  }
  const prompt = promptOf(last.content);
  if ("status" in prompt) return prompt;
  return [{ type: "prompt", ...prompt } as CommandBody];
}

function decisionOf(entry: ResumeEntry): CommandBody | ApiError {
  const toolCallId = entry.interruptId;
  if (!isToolCallId(toolCallId)) return apiError(400, "invalid", "body: resume: interruptId must be a tool call id");
  if (entry.status === "cancelled") return { type: "deny_tool_call", toolCallId, reason: "Interrupt cancelled" };
  const answer = ApprovalAnswer.safeParse(entry.payload);
  if (!answer.success) {
    return apiError(400, "invalid", `body: resume ${toolCallId}: payload must be {approved: boolean, reason?: string}`);
  }
  return answer.data.approved
    ? { type: "approve_tool_call", toolCallId }
    : { type: "deny_tool_call", toolCallId, ...(answer.data.reason ? { reason: answer.data.reason } : {}) };
}

type Part = Extract<RunAgentInput["messages"][number], { role: "user" }>["content"];

/** A user message's content as a prompt: its text parts (one per line) and inline images. */
function promptOf(
  content: Part,
): { text: string; images?: { type: "image"; data: string; mimeType: string }[] } | ApiError {
  if (typeof content === "string") return { text: content };
  const texts: string[] = [];
  const images: { type: "image"; data: string; mimeType: string }[] = [];
  for (const part of content) {
    if (part.type === "text") texts.push(part.text);
    else if (part.type === "image" && part.source.type === "data") {
      images.push({ type: "image", data: part.source.value, mimeType: part.source.mimeType });
    } else {
      return apiError(
        400,
        "invalid",
        `body: a ${part.type} part by ${"source" in part ? part.source.type : "reference"} is not supported (text and inline images are)`,
      );
    }
  }
  return { text: texts.join("\n"), ...(images.length > 0 ? { images } : {}) };
}

/** Whether a command id is one the AG-UI route sent. */
export const isAguiCommandId = (commandId: string): boolean => commandId.startsWith(AGUI_COMMAND_PREFIX);
