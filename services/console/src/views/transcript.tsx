// A transcript: messages, the partial message, running tools with progress; thinking folded, errors marked.
import type { AgentMessage, ContextMessage } from "@fleet/protocol";
import { Fragment } from "preact";
import { useState } from "preact/hooks";
import { linkTo } from "../router.js";
import { Content } from "./content-blocks.js";
import { runPath } from "./run-waterfall.js";

/** Messages rendered at first, and added by each "show earlier" click (the newest stay in view). */
const PAGE = 200;

export function Transcript(props: {
  messages: readonly ContextMessage[];
  streaming?: AgentMessage | undefined;
  running?: ReadonlyMap<string, unknown> | undefined;
  pending?: ReadonlySet<string> | undefined;
  sessionId?: string;
  /** Message index → the run that starts with that message (a link to its waterfall goes above it). */
  runLinks?: ReadonlyMap<number, string>;
}) {
  const { messages } = props;
  const [shown, setShown] = useState(PAGE);
  const hidden = Math.max(0, messages.length - shown);
  return (
    <div class="transcript" data-testid="transcript">
      {hidden > 0 && (
        <button type="button" class="show-earlier" data-testid="show-earlier" onClick={() => setShown(shown + PAGE)}>
          show {Math.min(PAGE, hidden)} earlier messages ({hidden} not shown)
        </button>
      )}
      {messages.slice(hidden).map((m, i) => {
        const runId = props.runLinks?.get(hidden + i);
        return (
          <Fragment key={hidden + i}>
            {runId !== undefined && props.sessionId !== undefined && (
              <a
                class="run-link"
                data-testid="run-link"
                data-run-id={runId}
                href={runPath(props.sessionId, runId)}
                onClick={linkTo(runPath(props.sessionId, runId))}
              >
                run {runId} · waterfall ▸
              </a>
            )}
            <Message message={m} />
          </Fragment>
        );
      })}
      {props.streaming && (
        <div class="streaming" data-testid="streaming">
          <Message message={props.streaming} />
        </div>
      )}
      {props.pending && props.pending.size > 0 && (
        <div class="running" data-testid="running-tools">
          {[...props.pending].map((id) => (
            <div key={id} class="tool running-tool">
              running tool call <code>{id}</code>
              {props.running?.has(id) && <pre class="progress">{show(props.running.get(id))}</pre>}
            </div>
          ))}
        </div>
      )}
    </div>
  );
}

export function Message({ message: m }: { message: AgentMessage | ContextMessage }) {
  switch (m.role) {
    case "user":
      return (
        <div class="msg user" data-role="user">
          <span class="who">user</span>
          <Content content={m.content} />
        </div>
      );
    case "assistant":
      return (
        <div
          class={`msg assistant${m.stopReason === "error" ? " error" : ""}${m.stopReason === "aborted" ? " aborted" : ""}`}
          data-role="assistant"
          data-stop-reason={m.stopReason}
        >
          <span class="who">assistant{m.stopReason === "aborted" ? " · aborted" : ""}</span>
          {m.content.map((block, i) => {
            if (block.type === "text") return <Content key={i} content={[block]} />;
            if (block.type === "thinking")
              return (
                <details key={i} class="thinking">
                  <summary>thinking</summary>
                  {block.thinking}
                </details>
              );
            if (block.type === "toolCall")
              return (
                <div key={i} class="tool call" data-testid="tool-call">
                  tool <b>{block.name}</b> <code>{block.id}</code>
                  <pre>{show(block.arguments)}</pre>
                </div>
              );
            return null;
          })}
          {m.errorMessage && m.stopReason !== "aborted" && <div class="error-text">error: {m.errorMessage}</div>}
        </div>
      );
    case "toolResult":
      return (
        <div class={`msg tool-result${m.isError ? " error" : ""}`} data-testid="tool-result" data-role="toolResult">
          <span class="who">
            {m.isError ? "✗" : "✓"} {m.toolName} result
          </span>
          <Content content={m.content} pre />
        </div>
      );
    case "custom":
      return (
        <div class="msg custom">
          <span class="who">{m.customType}</span>
          <Content content={m.content} />
        </div>
      );
    case "branchSummary":
      return (
        <div class="msg summary">
          <span class="who">branch summary</span>
          <div class="text">{m.summary}</div>
        </div>
      );
    case "compactionSummary":
      return (
        <div class="msg summary">
          <span class="who">compaction summary</span>
          <div class="text">{m.summary}</div>
        </div>
      );
  }
}

export function contentText(content: string | readonly { type: string; text?: string }[]): string {
  if (typeof content === "string") return content;
  return content.map((b) => (b.type === "text" ? (b.text ?? "") : `[${b.type}]`)).join("\n");
}

export function show(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? "";
  } catch {
    return String(value);
  }
}
