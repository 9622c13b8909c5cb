// The fake's stateless mode: a responder whose reply depends on the request body alone, so a
// re-issued call (a resumed run, a retried stream) gets the same answer, tool call ids included.

import { createHash } from "node:crypto";
import { fakeReply, fakeText, fakeToolUse } from "./fake-anthropic-builders.js";
import type { FakeResponder, MessagesRequestBody } from "./fake-anthropic-types.js";

/** One tool call the model makes; `suffix` makes its id unique within the reply. */
export interface StatelessToolUse {
  readonly suffix: string;
  readonly name: string;
  readonly input: unknown;
}

/** What the stateless model does. Both functions must be pure. */
export interface StatelessPlan {
  /**
   * The tool calls for a turn that ends with a user prompt (`prompt` is its text). `idOf(suffix)` is
   * the id the call will get: `toolu_<digest of the request's messages>_<suffix>`.
   */
  readonly toolsFor: (prompt: string, idOf: (suffix: string) => string) => readonly StatelessToolUse[];
  /** The final text after the tool results came back (`prompt`: the run's prompt). */
  readonly finalText: (prompt: string) => string;
}

/**
 * A responder for `fake.respondWith`: when the last message is a user prompt it answers with
 * `plan.toolsFor` (`stop_reason: tool_use`); when it holds tool results (or there are no tools to
 * call), with `plan.finalText` (`end_turn`). Contract: equal `messages` give an equal reply.
 */
export function statelessResponder(plan: StatelessPlan): FakeResponder {
  return (request) => {
    const messages = request.body?.messages ?? [];
    const prompt = lastPromptText(messages);
    const last = messages[messages.length - 1];
    if (!hasToolResults(last)) {
      const digest = digestOf(messages);
      const uses = plan.toolsFor(prompt, (suffix) => `toolu_${digest}_${suffix}`);
      if (uses.length > 0) {
        return fakeReply(uses.map((u) => fakeToolUse(u.name, u.input, { id: `toolu_${digest}_${u.suffix}` })));
      }
    }
    return fakeReply([fakeText(plan.finalText(prompt))]);
  };
}

type Message = MessagesRequestBody["messages"][number];

function blocksOf(message: Message | undefined): readonly { type?: unknown; text?: unknown }[] {
  const content = (message as { content?: unknown } | undefined)?.content;
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? (content as { type?: unknown; text?: unknown }[]) : [];
}

function hasToolResults(message: Message | undefined): boolean {
  return blocksOf(message).some((b) => b.type === "tool_result");
}

/** The text of the last user message that is a prompt (not tool results). */
function lastPromptText(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown } | undefined;
    if (m?.role !== "user" || hasToolResults(messages[i])) continue;
    return blocksOf(messages[i])
      .flatMap((b) => (b.type === "text" && typeof b.text === "string" ? [b.text] : []))
      .join("");
  }
  return "";
}

function digestOf(messages: readonly Message[]): string {
  return createHash("sha256").update(JSON.stringify(messages)).digest("hex").slice(0, 24);
}
