// Renders a session's events for a person: streamed text, dimmed thinking, tool calls with a spinner.
import { describeApprovalDecision, type FleetEvent } from "@fleet/protocol";
import { CLEAR_LINE, type Style } from "./ansi.js";
import { contentText, formatToolCall, oneLine } from "./format-entry.js";

export interface RenderTarget {
  write(text: string): unknown;
}

export interface RendererOptions {
  style: Style;
  /** Animate a spinner line while tools run (a TTY); otherwise print one line per tool start. */
  animate: boolean;
  /** Result lines shown under a finished tool call. Default 3. */
  resultLines?: number;
  /** Hide user messages whose text is in this set (the chat already echoed what was typed). */
  echoed?: Set<string>;
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/**
 * Turns events into terminal output. Contract: output is append-only except the spinner line,
 * which is cleared before anything else is written; `stop()` clears it and stops the timer.
 */
export class EventRenderer {
  readonly #out: RenderTarget;
  readonly #opts: RendererOptions;
  readonly #tools = new Map<string, string>();
  #column = 0;
  #block: "text" | "thinking" | undefined;
  #streamed = false;
  #spinnerShown = false;
  #frame = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(out: RenderTarget, opts: RendererOptions) {
    this.#out = out;
    this.#opts = opts;
  }

  /** True while tool calls are running (the spinner is active). */
  get busyWithTools(): boolean {
    return this.#tools.size > 0;
  }

  handle(event: FleetEvent): void {
    const s = this.#opts.style;
    switch (event.type) {
      case "message_start":
        if (event.message.role === "assistant") {
          this.#streamed = false;
          this.#block = undefined;
        }
        return;
      case "message_update":
        for (const delta of event.deltas) {
          if (delta.type === "text_delta") this.#stream("text", delta.delta);
          else if (delta.type === "thinking_delta") this.#stream("thinking", delta.delta);
        }
        return;
      case "message_end":
        this.#messageEnd(event);
        return;
      case "tool_execution_start":
        this.#endLine();
        this.#tools.set(event.toolCallId, formatToolCall(event.toolName, event.args));
        if (this.#opts.animate) this.#startSpinner();
        else this.#line(s.dim(`… ${formatToolCall(event.toolName, event.args)}`));
        return;
      case "tool_execution_end": {
        const call = this.#tools.get(event.toolCallId) ?? formatToolCall(event.toolName, {});
        this.#tools.delete(event.toolCallId);
        this.#line(event.isError ? s.red(`✗ ${call}`) : s.green(`✓ ${call}`));
        const text = contentText(event.result.content);
        const lines = text.split("\n").filter((l) => l.trim().length > 0);
        const shown = this.#opts.resultLines ?? 3;
        for (const line of lines.slice(0, shown)) this.#line(s.dim(`  ${oneLine(line, 110)}`));
        if (lines.length > shown) this.#line(s.dim(`  … ${lines.length - shown} more lines`));
        if (this.#tools.size === 0) this.#stopSpinner();
        return;
      }
      case "agent_end":
        this.#endLine();
        this.#stopSpinner();
        this.#tools.clear();
        return;
      case "command_rejected":
        this.#line(s.red(`✗ ${event.commandType} rejected (${event.code}): ${event.reason}`));
        return;
      case "queue_update": {
        const counts = [
          ["steer", event.steer.length],
          ["follow-up", event.followUp.length],
          ["next-turn", event.nextTurn.length],
        ].filter(([, n]) => (n as number) > 0);
        if (counts.length > 0) this.#line(s.dim(`⋯ queued: ${counts.map(([k, n]) => `${n} ${k}`).join(", ")}`));
        return;
      }
      case "compaction":
        this.#line(s.yellow(`⟳ compacted (${event.tokensBefore} tokens before)`));
        return;
      case "branch_summary":
        this.#line(s.dim(`⟳ branch summarized: ${oneLine(event.summary, 80)}`));
        return;
      case "model_change":
        this.#line(s.dim(`model: ${event.provider}/${event.modelId}`));
        return;
      case "thinking_level_change":
        this.#line(s.dim(`thinking: ${event.thinkingLevel}`));
        return;
      case "active_tools_change":
        this.#line(s.dim(`tools: ${event.toolNames.join(", ")}`));
        return;
      case "label":
        this.#line(s.dim(`label ${event.targetId.slice(-8)}: ${event.label ?? "(removed)"}`));
        return;
      case "session_info":
        this.#line(s.dim(`name: ${event.name}`));
        return;
      case "leaf":
        this.#line(s.dim(`leaf → ${event.targetId ? event.targetId.slice(-8) : "(root)"}`));
        return;
      case "run_resumed":
        this.#line(s.yellow(`↻ run resumed (${event.reason})`));
        return;
      case "config_change": {
        const changed = Object.entries({
          "system prompt": event.systemPrompt === undefined ? undefined : "changed",
          steering: event.steeringMode,
          "follow-up": event.followUpMode,
          "tool execution": event.toolExecution,
        }).filter(([, v]) => v !== undefined);
        this.#line(s.dim(`config: ${changed.map(([k, v]) => `${k} ${v}`).join(", ")}`));
        return;
      }
      case "tool_approval_resolved":
        this.#line(s.dim(`tool call ${event.toolCallId} ${describeApprovalDecision(event)}`));
        return;
      case "tool_approval_requested":
        this.#line(
          s.yellow(`? ${formatToolCall(event.toolName, event.args)} needs approval (tool call ${event.toolCallId})`),
        );
        return;
      default:
        return;
    }
  }

  /** Clears the spinner and stops its timer. */
  stop(): void {
    this.#stopSpinner();
  }

  /** Writes a whole line of the caller's (after ending any open line). */
  print(line: string): void {
    this.#line(line);
  }

  #messageEnd(event: Extract<FleetEvent, { type: "message_end" }>): void {
    const s = this.#opts.style;
    const message = event.message;
    if (message.role === "user") {
      const text = contentText(message.content);
      if (this.#opts.echoed?.delete(text)) return;
      this.#line(s.cyan(`› ${text}`));
      return;
    }
    if (message.role === "custom") {
      if (message.display)
        this.#line(s.magenta(`[${message.customType}] ${oneLine(contentText(message.content), 200)}`));
      return;
    }
    if (message.role !== "assistant") return;
    if (!this.#streamed) {
      for (const block of message.content) {
        if (block.type === "thinking" && block.thinking) this.#stream("thinking", block.thinking);
        if (block.type === "text" && block.text) this.#stream("text", block.text);
      }
    }
    this.#endLine();
    if (message.stopReason === "aborted") this.#line(s.yellow("⏹ aborted"));
    else if (message.stopReason === "error") this.#line(s.red(`✗ ${message.errorMessage ?? "error"}`));
    else if (message.stopReason === "length") this.#line(s.yellow("… stopped at the output-token limit"));
  }

  #stream(kind: "text" | "thinking", text: string): void {
    if (text.length === 0) return;
    this.#streamed = true;
    if (this.#block !== kind) {
      this.#endLine();
      this.#block = kind;
    }
    const s = this.#opts.style;
    this.#write(kind === "thinking" ? s.dim(text) : text);
    const lastBreak = text.lastIndexOf("\n");
    this.#column = lastBreak === -1 ? this.#column + text.length : text.length - lastBreak - 1;
  }

  #line(text: string): void {
    this.#endLine();
    this.#write(`${text}\n`);
    this.#block = undefined;
  }

  #endLine(): void {
    if (this.#column > 0) this.#write("\n");
    this.#column = 0;
  }

  #write(text: string): void {
    if (this.#spinnerShown) {
      this.#out.write(CLEAR_LINE);
      this.#spinnerShown = false;
    }
    this.#out.write(text);
  }

  #startSpinner(): void {
    this.#drawSpinner();
    this.#timer ??= setInterval(() => this.#drawSpinner(), 80);
  }

  #drawSpinner(): void {
    if (this.#tools.size === 0 || this.#column > 0) return;
    const frame = FRAMES[this.#frame++ % FRAMES.length] as string;
    const calls = [...this.#tools.values()].join("  ");
    this.#out.write(`${CLEAR_LINE}${this.#opts.style.cyan(frame)} ${oneLine(calls, 110)}`);
    this.#spinnerShown = true;
  }

  #stopSpinner(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#spinnerShown) this.#out.write(CLEAR_LINE);
    this.#spinnerShown = false;
  }
}
