// `fleet chat [sessionId]`: an interactive session in the terminal.
import { writeFileSync } from "node:fs";
import { createInterface, type Interface } from "node:readline";
import { parseModelName, ThinkingLevel } from "@fleet/protocol";
import { type FleetClient, isFleetError, type SessionView } from "../../index.js";
import { emptySessionView, foldSessionView } from "../../session-view.js";
import { CLEAR_LINE, type Style } from "../ansi.js";
import { connectClient } from "../connect.js";
import { drawTree, resolveEntryRef } from "../draw-tree.js";
import { summarizeMessage } from "../format-entry.js";
import { type CliIo, outStyle } from "../io.js";
import { loadTree } from "../load-tree.js";
import { EventRenderer } from "../render-events.js";

const HELP = [
  "text             prompt (while a run is active: steer)",
  "/steer <text>    steering message (delivered after the running tools)",
  "/followup <text> follow-up message (delivered when the agent would stop)",
  "/next <text>     message for the start of the next run",
  "/model [provider/]<modelId>   /thinking <off|minimal|low|medium|high|xhigh>",
  "/tree            the session tree     /fork <entry>   fork here and switch to it",
  "/label <entry> [text]   label an entry (no text removes it)",
  "/compact [instructions] /export [file] /help /quit",
  "Ctrl-C aborts the run; a second Ctrl-C quits.",
];

const DOUBLE_PRESS_MS = 2_000;

/** Runs until the person quits; returns the exit code. */
export async function chatCommand(io: CliIo, sessionArg: string | undefined): Promise<number> {
  const client = await connectClient(io);
  const style = outStyle(io);
  const out = io.stdout;
  const say = (line: string) => out.write(`${line}\n`);
  try {
    let sessionId = sessionArg ?? (await client.createSession()).sessionId;
    say(
      style.bold(`fleet chat · session ${sessionId}${sessionArg ? "" : " (new)"}`) + style.dim("  /help for commands"),
    );
    const chat = new ChatSession(client, io, style);
    await chat.follow(sessionId, sessionArg !== undefined);

    const rl = createInterface({ input: io.stdin, output: out, terminal: io.stdin.isTTY === true, prompt: "> " });
    chat.attach(rl);
    let lastInterrupt = 0;
    let done: () => void = () => undefined;
    const finished = new Promise<void>((r) => {
      done = r;
    });
    rl.on("close", () => done());
    rl.on("SIGINT", () => {
      const now = Date.now();
      if (now - lastInterrupt < DOUBLE_PRESS_MS) return rl.close();
      lastInterrupt = now;
      if (chat.running) {
        chat.notice(style.yellow("⏹ aborting (Ctrl-C again to quit)"));
        client.abort(sessionId).catch((e: unknown) => chat.notice(style.red(errorLine(e))));
      } else {
        rl.write(null, { ctrl: true, name: "u" });
        chat.notice(style.dim("(Ctrl-C again to quit)"));
      }
    });
    // Lines are handled one after another, so commands reach the loop in the order they were typed.
    let pending: Promise<void> = Promise.resolve();
    rl.on("line", (line) => {
      pending = pending.then(() => handleLine(line));
    });
    const handleLine = (line: string) =>
      chat.handleLine(line.trim(), sessionId, {
        switchTo: async (next) => {
          sessionId = next;
          say(style.bold(`switched to session ${next}`));
          await chat.follow(next, true);
        },
        quit: () => rl.close(),
      });
    chat.prompt();
    await finished;
    chat.stop();
    say("");
    return 0;
  } finally {
    await client.close();
  }
}

interface LineActions {
  switchTo(sessionId: string): Promise<void>;
  quit(): void;
}

/** The state of one chat: the followed session, its live fold and its renderer. */
class ChatSession {
  readonly renderer: EventRenderer;
  readonly #client: FleetClient;
  readonly #io: CliIo;
  readonly #style: Style;
  readonly #echoed = new Set<string>();
  #view: SessionView = emptySessionView();
  #follow: AbortController | undefined;
  #rl: Interface | undefined;
  /** The `> ` prompt is on screen (output must clear it first, then redraw it). */
  #promptShown = false;

  constructor(client: FleetClient, io: CliIo, style: Style) {
    this.#client = client;
    this.#io = io;
    this.#style = style;
    this.renderer = new EventRenderer(io.stdout, { style, animate: io.stdout.isTTY === true, echoed: this.#echoed });
  }

  get running(): boolean {
    return this.#view.agent.isStreaming;
  }

  attach(rl: Interface): void {
    this.#rl = rl;
    rl.on("line", () => {
      this.#promptShown = false;
    });
  }

  /** Prints a line above the prompt (clearing and redrawing the prompt when it is shown). */
  notice(line: string): void {
    if (this.#promptShown) {
      this.#io.stdout.write(CLEAR_LINE);
      this.#promptShown = false;
    }
    this.renderer.print(line);
    this.prompt();
  }

  /** Shows the prompt (keeping what was typed) unless a run is active. */
  prompt(): void {
    if (this.running || !this.#rl) return;
    this.#rl.prompt(true);
    this.#promptShown = true;
  }

  /** Shows the session so far (for an existing one), then renders its new events as they arrive. */
  async follow(sessionId: string, showHistory: boolean): Promise<void> {
    this.#follow?.abort();
    const replayed = await this.#client.replay(sessionId);
    this.#view = { seq: replayed.seq, agent: replayed.agent, tree: replayed.tree };
    if (showHistory) {
      const messages = replayed.agent.messages.slice(-10);
      if (replayed.agent.messages.length > messages.length) {
        this.renderer.print(this.#style.dim(`… ${replayed.agent.messages.length - messages.length} earlier messages`));
      }
      for (const m of messages) this.renderer.print(this.#style.dim(summarizeMessage(m, 100)));
      if (replayed.agent.isStreaming) this.renderer.print(this.#style.yellow("(a run is in progress)"));
    }
    const abort = new AbortController();
    this.#follow = abort;
    void (async () => {
      try {
        for await (const item of this.#client.events(sessionId, { from: replayed.seq + 1, signal: abort.signal })) {
          const wasRunning = this.running;
          const hadPrompt = this.#promptShown;
          if (hadPrompt) {
            this.#io.stdout.write(CLEAR_LINE);
            this.#promptShown = false;
          }
          this.#view = foldSessionView(this.#view, item.seq, item.event);
          this.renderer.handle(item.event);
          if (!this.running && (hadPrompt || wasRunning)) this.prompt();
        }
      } catch (e) {
        this.renderer.print(this.#style.red(errorLine(e)));
      }
    })();
  }

  stop(): void {
    this.#follow?.abort();
    this.renderer.stop();
  }

  async handleLine(line: string, sessionId: string, actions: LineActions): Promise<void> {
    const s = this.#style;
    const c = this.#client;
    const print = (text: string) => this.renderer.print(text);
    try {
      if (line === "") {
        this.prompt();
        return;
      }
      if (!line.startsWith("/")) {
        if (this.running) {
          await c.steer(sessionId, line);
          print(s.dim("(sent as steering: the run is active)"));
          return;
        }
        this.#echoed.add(line);
        await c.prompt(sessionId, line);
        return; // agent_end shows the prompt again
      }
      const [command = "", ...rest] = line.slice(1).split(/\s+/);
      const arg = rest.join(" ");
      const needArg = (what: string) => {
        if (!arg) throw new Error(`usage: /${command} ${what}`);
        return arg;
      };
      switch (command) {
        case "help":
          for (const h of HELP) print(s.dim(h));
          break;
        case "quit":
        case "exit":
          return actions.quit();
        case "steer":
          await c.steer(sessionId, needArg("<text>"));
          print(s.dim("steering message queued"));
          break;
        case "followup":
        case "follow-up":
          await c.followUp(sessionId, needArg("<text>"));
          print(s.dim("follow-up queued"));
          break;
        case "next":
          await c.nextTurn(sessionId, needArg("<text>"));
          print(s.dim("queued for the next run"));
          break;
        case "model": {
          if (!arg) {
            const m = this.#view.agent.model;
            print(`model: ${m ? `${m.provider}/${m.modelId}` : "(default)"}`);
            break;
          }
          await c.setModel(sessionId, parseModelName(arg));
          break;
        }
        case "thinking": {
          if (!arg) {
            print(`thinking: ${this.#view.agent.thinkingLevel}`);
            break;
          }
          const level = ThinkingLevel.safeParse(arg);
          if (!level.success) throw new Error(`thinking level must be one of ${ThinkingLevel.options.join(", ")}`);
          await c.setThinkingLevel(sessionId, level.data);
          break;
        }
        case "tree": {
          const tree = await loadTree(c, sessionId);
          if (tree.entries.length === 0) print(s.dim("(no entries yet)"));
          for (const l of drawTree(tree, s)) print(l);
          break;
        }
        case "fork": {
          const entryId = await this.#entry(sessionId, needArg("<entry>"));
          const forked = await c.fork(sessionId, entryId);
          await actions.switchTo(forked.sessionId);
          break;
        }
        case "label": {
          const [ref = "", ...words] = rest;
          if (!ref) throw new Error("usage: /label <entry> [text]");
          const entryId = await this.#entry(sessionId, ref);
          await c.label(sessionId, entryId, words.length ? words.join(" ") : null);
          break;
        }
        case "compact":
          await c.compact(sessionId, arg || undefined);
          print(s.dim("compaction requested"));
          break;
        case "export": {
          const file = arg || `${sessionId}.jsonl`;
          writeFileSync(file, await c.export(sessionId));
          print(`exported to ${file}`);
          break;
        }
        default:
          print(s.red(`unknown command /${command} (/help lists them)`));
      }
    } catch (e) {
      print(s.red(errorLine(e)));
    }
    this.prompt();
  }

  async #entry(sessionId: string, ref: string): Promise<string> {
    const tree = await loadTree(this.#client, sessionId);
    const resolved = resolveEntryRef(tree.entries, ref);
    if (!resolved.ok) throw new Error(resolved.error);
    return resolved.id;
  }
}

function errorLine(e: unknown): string {
  if (isFleetError(e)) return `✗ ${e.message}`;
  return `✗ ${e instanceof Error ? e.message : String(e)}`;
}
