// The scripted provider's script format (README "Scripted provider"): JSON or JSONL.
import { type Decoded, StopReason, Usage, validate } from "@fleet/protocol";
import { z } from "zod";

export const ScriptBlock = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string(), textSignature: z.string().optional() }),
  z.object({ type: z.literal("thinking"), thinking: z.string(), thinkingSignature: z.string().optional() }),
  z.object({
    type: z.literal("toolCall"),
    id: z.string().min(1),
    name: z.string().min(1),
    arguments: z.record(z.string(), z.unknown()).default({}),
  }),
]);
export type ScriptBlock = z.infer<typeof ScriptBlock>;

/**
 * One LLM response. `text` is shorthand for one text block (it comes after `content`); `error` is
 * shorthand for `stopReason: "error", errorMessage: error`. stopReason defaults to `toolUse` when
 * there are tool calls, else `stop`. Content always streams first; an `error` / `aborted`
 * stopReason then ends the stream with an `error` event instead of `done`.
 */
export const ScriptTurn = z.object({
  content: z.array(ScriptBlock).default([]),
  text: z.string().optional(),
  stopReason: StopReason.optional(),
  errorMessage: z.string().optional(),
  error: z.string().optional(),
  usage: Usage.optional(),
  /** Overrides the script's rate for this response. */
  tokensPerSecond: z.number().positive().optional(),
});
export type ScriptTurn = z.infer<typeof ScriptTurn>;
export type ScriptTurnInput = z.input<typeof ScriptTurn>;

export const ScriptOptions = z.object({
  api: z.string().min(1).default("scripted"),
  /** Model id written into messages; default: the requested model's id. */
  model: z.string().min(1).optional(),
  /** Streaming rate; a chunk of n characters takes ceil(n/4)/rate seconds. Unset: no delay. */
  tokensPerSecond: z.number().positive().optional(),
  /** Characters per delta; unset: one delta per block. */
  chunkChars: z.number().int().positive().optional(),
});
export type ScriptOptions = z.infer<typeof ScriptOptions>;

export const Script = ScriptOptions.extend({ turns: z.array(ScriptTurn) });
export type Script = z.infer<typeof Script>;

/**
 * Parses a script from text:
 * - JSON: an object `{…options, turns: [...]}`, or an array of turns;
 * - JSONL: one turn per line; a line `{"options": {...}}` sets options; blank lines are skipped.
 * Never throws; errors name the line (JSONL) and the field.
 */
export function parseScript(text: string): Decoded<Script> {
  const trimmed = text.trim();
  try {
    const whole: unknown = JSON.parse(trimmed);
    if (Array.isArray(whole)) return validate(Script, { turns: whole });
    if (whole !== null && typeof whole === "object" && "turns" in whole) return validate(Script, whole);
  } catch {
    // not one JSON document: read it as JSONL
  }
  let options: unknown = {};
  const turns: unknown[] = [];
  const lines = trimmed.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (line === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      const message = `line ${i + 1}: not JSON: ${(error as Error).message}`;
      return { ok: false, error: message, issues: [{ path: `line ${i + 1}`, message }] };
    }
    if (value !== null && typeof value === "object" && "options" in value)
      options = (value as { options: unknown }).options;
    else turns.push(value);
  }
  return validate(Script, { ...(options as object), turns });
}
