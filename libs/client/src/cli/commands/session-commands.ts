// One-shot commands: prompt, steer, follow-up, abort, fork, import.
import { readFileSync } from "node:fs";
import { importPiJsonl } from "@fleet/protocol";
import { newSessionId } from "../../index.js";
import { CliError } from "../cli-error.js";
import { withClient } from "../connect.js";
import { type CliIo, errStyle, onInterrupt, outStyle } from "../io.js";
import { resolveEntry } from "../load-tree.js";
import { EventRenderer } from "../render-events.js";

export interface PromptOptions {
  session?: string;
  json?: boolean;
}

/**
 * Sends a prompt and streams the run until `agent_end`. A new session is created when none is given
 * (its id goes to stderr). Ctrl-C aborts the run; a second Ctrl-C exits at once.
 * Returns the exit code: 1 when the run ended with an error.
 */
export async function promptCommand(io: CliIo, text: string, opts: PromptOptions): Promise<number> {
  return withClient(io, async (client) => {
    const sessionId = opts.session ?? newSessionId();
    if (!opts.session) io.stderr.write(`${errStyle(io).dim(`session ${sessionId}`)}\n`);
    const accepted = await client.prompt(sessionId, text);
    const renderer = new EventRenderer(io.stdout, {
      style: outStyle(io),
      animate: io.stdout.isTTY === true,
      echoed: new Set([text]),
    });
    const stop = new AbortController();
    const offInterrupt = onInterrupt((count) => {
      if (count > 1) process.exit(130);
      io.stderr.write(`${errStyle(io).yellow("aborting the run (Ctrl-C again to quit)")}\n`);
      client.abort(sessionId).catch(() => undefined);
    });
    let failed = false;
    try {
      for await (const item of client.events(sessionId, { from: accepted.seq, signal: stop.signal })) {
        if (opts.json) io.stdout.write(`${JSON.stringify({ seq: item.seq, event: item.event })}\n`);
        else renderer.handle(item.event);
        const event = item.event;
        if (event.type === "message_end" && event.message.role === "assistant") {
          failed = event.message.stopReason === "error";
        }
        if (event.type === "agent_end") break;
      }
    } finally {
      offInterrupt();
      renderer.stop();
    }
    return failed ? 1 : 0;
  });
}

/** `steer`, `follow-up`, `abort`: send one command and report its outcome. */
export async function queueCommand(
  io: CliIo,
  kind: "steer" | "follow_up" | "abort",
  sessionId: string,
  text?: string,
): Promise<number> {
  return withClient(io, async (client) => {
    const outcome =
      kind === "abort"
        ? await client.abort(sessionId)
        : kind === "steer"
          ? await client.steer(sessionId, text ?? "")
          : await client.followUp(sessionId, text ?? "");
    io.stdout.write(`${outStyle(io).green("✓")} ${kind} accepted (seq ${outcome.seq})\n`);
    return 0;
  });
}

/** Forks at an entry (full id, or a unique suffix/prefix as `fleet tree` shows it). Prints the new session id. */
export async function forkCommand(
  io: CliIo,
  sessionId: string,
  entryRef: string,
  newSession?: string,
): Promise<number> {
  return withClient(io, async (client) => {
    const entryId = await resolveEntry(client, sessionId, entryRef);
    const forked = await client.fork(sessionId, entryId, newSession ? { sessionId: newSession } : {});
    io.stdout.write(`${forked.sessionId}\n`);
    return 0;
  });
}

/** Imports a pi v3 JSONL session file as a new session. Prints the new session id. */
export async function importCommand(io: CliIo, file: string, newSession?: string): Promise<number> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const parsed = importPiJsonl(text);
  if (!parsed.ok) {
    const first = parsed.issues[0];
    const more = parsed.issues.length > 1 ? ` (and ${parsed.issues.length - 1} more problems)` : "";
    throw new CliError(`${file} is not a pi v3 session file: line ${first?.line}: ${first?.message}${more}`);
  }
  return withClient(io, async (client) => {
    const imported = await client.importSession(
      { entries: parsed.entries, leafId: parsed.leafId },
      { sessionId: newSession ?? newSessionId() },
    );
    io.stdout.write(`${imported.sessionId}\n`);
    return 0;
  });
}
