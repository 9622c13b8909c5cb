// The `fleet` command line: argument parsing with commander; each action returns an exit code.
import { isSessionId, ThinkingLevel, UtcDay } from "@fleet/protocol";
import { Command, InvalidArgumentError, Option } from "commander";
import { CliError, EXIT } from "./cli-error.js";
import {
  type AgentWriteOptions,
  agentListCommand,
  agentNewCommand,
  agentSetCommand,
  agentShowCommand,
  agentWriteCommand,
} from "./commands/agent-commands.js";
import { approveCommand, denyCommand, rulesCommand, rulesSetCommand } from "./commands/approval-commands.js";
import { auditFeedCommand } from "./commands/audit-feed.js";
import {
  type BudgetSetOptions,
  budgetClearCommand,
  budgetCommand,
  budgetSetCommand,
} from "./commands/budget-commands.js";
import { chatCommand } from "./commands/chat.js";
import { childrenTreeCommand } from "./commands/children-command.js";
import { doctorCommand } from "./commands/doctor.js";
import { type LifecycleCommandOptions, lifecycleCommand } from "./commands/lifecycle-commands.js";
import {
  approvalsCommand,
  changesCommand,
  exportCommand,
  replayCommand,
  type SessionsOptions,
  sessionsCommand,
  treeCommand,
  watchCommand,
} from "./commands/read-commands.js";
import { diffCommand, isReplayWith, type ReplayWithOptions, replayWithCommand } from "./commands/replay-commands.js";
import { addScheduleCommands } from "./commands/schedule-commands.js";
import { forkCommand, importCommand, promptCommand, queueCommand } from "./commands/session-commands.js";
import { type TraceOptions, traceCommand, traceExportCommand } from "./commands/trace-commands.js";
import { upCommand } from "./commands/up.js";
import type { CliContext } from "./connect.js";
import type { CliIo } from "./io.js";

const sessionId = (value: string) => {
  if (!isSessionId(value)) throw new InvalidArgumentError("a session id is 1-128 characters of A-Z a-z 0-9 _ -");
  return value;
};
const positiveInt = (value: string) => {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError("must be a positive integer");
  return n;
};
const nonNegativeInt = (value: string) => {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new InvalidArgumentError("must be a non-negative integer");
  return n;
};
const dollars = (value: string) => {
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || !Number.isFinite(n))
    throw new InvalidArgumentError("must be a USD amount like 2.50");
  return n;
};
const utcDay = (value: string) => {
  if (!UtcDay.safeParse(value).success) throw new InvalidArgumentError("must be a UTC day, YYYY-MM-DD");
  return value;
};
const fromPosition = (value: string): number | "start" | "new" => {
  if (value === "start" || value === "new") return value;
  return positiveInt(value);
};
const text = (words: string[]) => {
  const joined = words.join(" ").trim();
  if (!joined) throw new CliError("the text is empty", EXIT.usage);
  return joined;
};

/**
 * Builds the program. `setExit` receives each action's exit code; `makeIo` gives the action its
 * streams (with the global `--nats` option applied).
 */
export function buildProgram(
  makeIo: (natsUrl: string | undefined, authFlags: CliContext["authFlags"]) => CliIo,
  setExit: (code: number) => void,
): Command {
  const program = new Command("fleet")
    .description("Fleet: run and drive event-sourced LLM agent sessions over NATS JetStream")
    .version("0.1.0")
    .option(
      "--nats <url>",
      "NATS URL (default: $NATS_URL, then .fleet/stack.json of a running `fleet up`, then nats://127.0.0.1:4222)",
    )
    .option("--creds <file>", "NATS creds file (default: $NATS_CREDS)")
    .option("--nkey <file>", "NATS nkey seed file (default: $NATS_NKEY)")
    .option("--user <user>", "NATS user (default: $NATS_USER)")
    .option("--password <password>", "NATS password (default: $NATS_PASSWORD, which `ps` cannot show)")
    .option("--token <token>", "NATS token (default: $NATS_TOKEN)")
    .option("--tls-ca <file>", "CA certificate to trust (default: $NATS_TLS_CA)")
    .option("--tls-cert <file>", "TLS client certificate (default: $NATS_TLS_CERT)")
    .option("--tls-key <file>", "TLS client key (default: $NATS_TLS_KEY)")
    .showSuggestionAfterError(true)
    .configureHelp({ sortSubcommands: false })
    // Set before the subcommands are added, so they inherit it: usage errors become one line
    // (`fleet: …`) and a thrown CommanderError instead of process.exit.
    .exitOverride()
    .configureOutput({
      writeOut: (s) => process.stdout.write(s),
      writeErr: (s) => process.stderr.write(s),
      outputError: (message, write) => write(`fleet: ${message.replace(/^error: /, "").trim()}\n`),
    });
  const io = () => {
    const o = program.opts<{ nats?: string } & Record<string, string | undefined>>();
    return makeIo(o.nats, {
      creds: o.creds,
      nkey: o.nkey,
      user: o.user,
      password: o.password,
      token: o.token,
      tlsCa: o.tlsCa,
      tlsCert: o.tlsCert,
      tlsKey: o.tlsKey,
    });
  };

  program
    .command("up")
    .description("start NATS, Redis, loop, tool runner and session store in the foreground (Ctrl-C stops all)")
    .option(
      "--secure",
      "operator mode: generated accounts and users (creds) for tenants acme and globex in .fleet/secure/ (FLEET_SECURE_DIR), each service under its own user, a gateway with bearer tokens",
    )
    .option(
      "--mcp-config <file>",
      'MCP servers whose tools the tool runner serves as mcp__<server>__<tool>: {"mcpServers": {...}}, the desktop clients\' format (FLEET_MCP_CONFIG)',
    )
    .action(async (o: { secure?: boolean; mcpConfig?: string }) =>
      setExit(await upCommand(io(), { secure: o.secure === true, ...(o.mcpConfig ? { mcpConfig: o.mcpConfig } : {}) })),
    );

  program
    .command("chat")
    .description("interactive chat; a new session unless one is given")
    .argument("[sessionId]", "session to continue", sessionId)
    .action(async (sid?: string) => setExit(await chatCommand(io(), sid)));

  program
    .command("prompt")
    .description("send a prompt and stream the run until agent_end")
    .argument("<text...>", "the prompt")
    .option("-s, --session <sessionId>", "session (default: a new one, printed on stderr)", sessionId)
    .option("--json", "print raw events as NDJSON {seq, event}")
    .action(async (words: string[], opts: { session?: string; json?: boolean }) =>
      setExit(await promptCommand(io(), text(words), opts)),
    );

  program
    .command("steer")
    .description("queue a steering message")
    .argument("<sessionId>", "session", sessionId)
    .argument("<text...>", "the message")
    .action(async (sid: string, words: string[]) => setExit(await queueCommand(io(), "steer", sid, text(words))));

  program
    .command("follow-up")
    .description("queue a follow-up message")
    .argument("<sessionId>", "session", sessionId)
    .argument("<text...>", "the message")
    .action(async (sid: string, words: string[]) => setExit(await queueCommand(io(), "follow_up", sid, text(words))));

  program
    .command("abort")
    .description("abort the running run of a session")
    .argument("<sessionId>", "session", sessionId)
    .action(async (sid: string) => setExit(await queueCommand(io(), "abort", sid)));

  program
    .command("watch")
    .description("follow a session's events (Ctrl-C stops)")
    .argument("<sessionId>", "session", sessionId)
    .addOption(new Option("--from <seq>", 'stream sequence, "start" or "new"').argParser(fromPosition).default("start"))
    .option("--json", "print raw events as NDJSON {seq, event}")
    .action(async (sid: string, opts: { from: number | "start" | "new"; json?: boolean }) =>
      setExit(await watchCommand(io(), sid, opts)),
    );

  program
    .command("changes")
    .description("follow the tenant's change feed: the sessions the store's indexes took changes of (Ctrl-C stops)")
    .option("--json", "print each frame as NDJSON {sessions, approvals, all}")
    .action(async (opts: { json?: boolean }) => setExit(await changesCommand(io(), opts)));

  program
    .command("replay")
    .description(
      "the agent state and tree as they stood at a stream sequence; with --from/--model/… or --sessions, run a session's user turns again with overrides",
    )
    .argument("[sessionId]", "session", sessionId)
    .option("--to <seq>", "stream sequence (default: the latest)", nonNegativeInt)
    .option("--from <entry>", "replay: keep the branch up to this entry, run the user turns after it")
    .option("--model <model>", "replay: [provider/]modelId")
    .option("--thinking <level>", "replay: thinking level")
    .option("--system <prompt>", "replay: system prompt")
    .option("--tools <names>", "replay: active tools, comma-separated")
    .option("--tools-mode <mode>", "replay: recorded (the original results; default) or live")
    .option("--sessions <query>", "replay every session the store's search finds; prints a table")
    .option("--limit <n>", "replay: at most this many sessions of --sessions (default 100)", positiveInt)
    .option("--no-wait", "replay: print the new session's id and return")
    .option("--timeout <s>", "replay: seconds to wait for the turns (default 300)", positiveInt)
    .option("--json", "print JSON")
    .action(async (sid: string | undefined, opts: ReplayWithOptions & { to?: number; json?: boolean }) => {
      if (isReplayWith(opts)) return setExit(await replayWithCommand(io(), sid, opts));
      if (sid === undefined) throw new CliError("replay needs a session", EXIT.usage);
      setExit(await replayCommand(io(), sid, opts));
    });

  program
    .command("diff")
    .description("compare two sessions turn by turn: messages, tool calls, tokens, cost and latency")
    .argument("<a>", "session", sessionId)
    .argument("<b>", "session", sessionId)
    .option("--json", "print JSON")
    .action(async (a: string, b: string, opts: { json?: boolean }) => setExit(await diffCommand(io(), a, b, opts)));

  const trace = program
    .command("trace")
    .description("a run as a waterfall: LLM calls and tool calls on a time axis, with tokens and cost")
    .argument("<sessionId>", "session", sessionId)
    .option("--run <runId>", "the run (default: the latest)")
    .option("--json", "print the run's spans (OpenTelemetry GenAI conventions) as JSON")
    .action(async (sid: string, opts: TraceOptions) => setExit(await traceCommand(io(), sid, opts)));
  trace
    .command("export")
    .description("send a session's runs as OpenTelemetry spans to OTEL_EXPORTER_OTLP_ENDPOINT (OTLP/HTTP)")
    .argument("<sessionId>", "session", sessionId)
    .option("--run <runId>", "only this run")
    .action(async (sid: string, opts: { run?: string }) => setExit(await traceExportCommand(io(), sid, opts)));

  program
    .command("tree")
    .description("draw the session tree with the leaf marked")
    .argument("<sessionId>", "session", sessionId)
    .option("--json", "print JSON")
    .option("--children", "the session's child sessions (sub-agents) with status and spend, instead of its entries")
    .option("--depth <n>", "with --children: levels of children (default 3)", (v) => Number(v))
    .action(async (sid: string, opts: { json?: boolean; children?: boolean; depth?: number }) =>
      setExit(await (opts.children ? childrenTreeCommand(io(), sid, opts) : treeCommand(io(), sid, opts))),
    );

  program
    .command("sessions")
    .description("list sessions (from the session store)")
    .option("-n, --limit <n>", "at most n sessions", positiveInt)
    .option("--running", "only sessions with an open run")
    .option("-q, --search <text>", "only sessions whose id or name (each from any word) or a label starts with text")
    .option("--cursor <cursor>", "the page after the one that printed this cursor")
    .option("--json", "print JSON")
    .action(async (opts: SessionsOptions) => setExit(await sessionsCommand(io(), opts)));

  const approvals = program
    .command("approvals")
    .description(
      "pending tool approvals, oldest first (decide with fleet approve / fleet deny); rules: approvals rules",
    )
    .option("-s, --session <sessionId>", "only this session's", sessionId)
    .option("--descendants", "with --session: its child sessions' (sub-agents) too")
    .option("--json", "print JSON")
    .action(async (opts: { session?: string; json?: boolean; descendants?: boolean }) =>
      setExit(await approvalsCommand(io(), opts)),
    );

  program
    .command("approve")
    .description("approve a tool call waiting for approval")
    .argument("<sessionId>", "session", sessionId)
    .argument("<toolCallId>", "the waiting call")
    .option("--args <json>", "run it with these arguments instead (JSON, or @file)")
    .action(async (sid: string, call: string, opts: { args?: string }) =>
      setExit(await approveCommand(io(), sid, call, opts)),
    );
  program
    .command("deny")
    .description("deny a tool call waiting for approval (the model gets an error result)")
    .argument("<sessionId>", "session", sessionId)
    .argument("<toolCallId>", "the waiting call")
    .option("--reason <text>", "the error result's text")
    .action(async (sid: string, call: string, opts: { reason?: string }) =>
      setExit(await denyCommand(io(), sid, call, opts)),
    );
  const rules = approvals
    .command("rules")
    .description("show the approval rules of the tenant, or of a session with --session")
    .option("-s, --session <sessionId>", "a session's rules", sessionId)
    .option("--json", "print JSON")
    .action(async (opts: { session?: string; json?: boolean }) => setExit(await rulesCommand(io(), opts)));
  rules
    .command("set")
    .description("replace the rules with a JSON array (inline or @file; [] removes them)")
    .argument("<rules>", 'e.g. \'[{"tool":"bash","args":{"pointer":"/command","regex":"^rm "},"action":"ask"}]\'')
    .option("-s, --session <sessionId>", "a session's rules (default: the tenant's)", sessionId)
    .action(async (json: string, opts: { session?: string }) => setExit(await rulesSetCommand(io(), json, opts)));

  addScheduleCommands(program, io, setExit);
  const agent = program
    .command("agent")
    .description("agents: named definitions whose versions are written once (create, update, show, list)");
  const agentWrite = (op: "create" | "update", description: string) =>
    agent
      .command(op)
      .description(description)
      .argument("<name>", "agent name (A-Z a-z 0-9 _ -)")
      .option(
        "--settings <json>",
        "the version's settings as JSON (inline or @file); the flags below replace its fields",
      )
      .option("--model <provider/modelId>", "model, e.g. anthropic/claude-sonnet-5")
      .addOption(new Option("--thinking <level>", "thinking level").choices(ThinkingLevel.options))
      .option("--system-prompt <text>", "system prompt (or @file)")
      .option("--tools <a,b>", "active tools (`all`: every registered tool)")
      .option("--description <text>", "what this version changes")
      .option("--json", "print the version as JSON")
      .action(async (name: string, opts: AgentWriteOptions) => setExit(await agentWriteCommand(io(), op, name, opts)));
  agentWrite("create", "create an agent: writes its version 1");
  agentWrite("update", "write an agent's next version (a version never changes)");
  agent
    .command("show")
    .description("an agent's versions and how many sessions run each")
    .argument("<name>", "agent name")
    .option("--version <n>", "one version in full", positiveInt)
    .option("--json", "print JSON")
    .action(async (name: string, opts: { version?: number; json?: boolean }) =>
      setExit(await agentShowCommand(io(), name, opts)),
    );
  agent
    .command("list")
    .description("every agent with its latest version and its sessions")
    .option("--json", "print JSON")
    .action(async (opts: { json?: boolean }) => setExit(await agentListCommand(io(), opts)));
  agent
    .command("new")
    .description("create a session from an agent (name: its latest version, or name@version); prints its id")
    .argument("<agent>", "name or name@version")
    .option("-s, --session <sessionId>", "id of the new session", sessionId)
    .action(async (ref: string, opts: { session?: string }) => setExit(await agentNewCommand(io(), ref, opts)));
  agent
    .command("set")
    .description("move a session to an agent version at its next turn boundary")
    .argument("<sessionId>", "session", sessionId)
    .argument("<agent>", "name (its latest version) or name@version")
    .action(async (sid: string, ref: string) => setExit(await agentSetCommand(io(), sid, ref)));

  const budget = program
    .command("budget")
    .description("the tenant's daily limits and what each session spent on a UTC day (default today)")
    .option("--day <YYYY-MM-DD>", "another UTC day", utcDay)
    .option("--json", "print JSON")
    .action(async (opts: { day?: string; json?: boolean }) => setExit(await budgetCommand(io(), opts)));
  budget
    .command("set")
    .description("replace the tenant's daily limits (a limit not given is no limit; needs an operator login)")
    .option("--input-tokens <n>", "prompt tokens per day (input + cache)", nonNegativeInt)
    .option("--output-tokens <n>", "output tokens per day", nonNegativeInt)
    .option("--total-tokens <n>", "input + output tokens per day", nonNegativeInt)
    .option("--cost <usd>", "USD per day", dollars)
    .action(async (opts: BudgetSetOptions) => setExit(await budgetSetCommand(io(), opts)));
  budget
    .command("clear")
    .description("remove the tenant's daily limits (needs an operator login)")
    .action(async () => setExit(await budgetClearCommand(io())));

  program
    .command("export")
    .description("export a session as pi v3 JSONL")
    .argument("<sessionId>", "session", sessionId)
    .option("-o, --output <file>", "write to a file instead of stdout")
    .action(async (sid: string, opts: { output?: string }) => setExit(await exportCommand(io(), sid, opts)));

  program
    .command("import")
    .description("import a pi v3 JSONL session file as a new session (prints its id)")
    .argument("<file>", "the .jsonl file")
    .option("-s, --session <sessionId>", "id of the new session", sessionId)
    .action(async (file: string, opts: { session?: string }) => setExit(await importCommand(io(), file, opts.session)));

  program
    .command("fork")
    .description("fork a session at an entry into a new session (prints its id)")
    .argument("<sessionId>", "session", sessionId)
    .argument("<entryId>", "entry id, or its last characters as `fleet tree` shows them")
    .option("-s, --session <sessionId>", "id of the new session", sessionId)
    .action(async (sid: string, entry: string, opts: { session?: string }) =>
      setExit(await forkCommand(io(), sid, entry, opts.session)),
    );

  const lifecycle = (name: string, op: "delete" | "archive" | "restore", description: string) =>
    program
      .command(name)
      .description(description)
      .argument("<sessionId>", "session", sessionId)
      .option("--by <who>", "who asks, for the lifecycle record (default: <user>@<host>)")
      .option("--timeout <ms>", "how long to wait for it to finish", positiveInt)
      .option("--json", "print the lifecycle record as JSON")
      .action(async (sid: string, opts: LifecycleCommandOptions & { timeout?: number }) =>
        setExit(
          await lifecycleCommand(io(), op, sid, {
            ...opts,
            ...(opts.timeout !== undefined ? { timeoutMs: opts.timeout } : {}),
          }),
        ),
      );
  lifecycle(
    "rm",
    "delete",
    "delete a session: its events, projection, blobs, workspace and budget records (refused during a run)",
  );
  lifecycle("archive", "archive", "write a session's whole log to the archive, then delete it");
  lifecycle("restore", "restore", "bring an archived session back with the same id and history");

  program
    .command("doctor")
    .description("check NATS, JetStream, Redis, streams, leases, tools and the store's lag")
    .option("--json", "print JSON")
    .action(async (opts: { json?: boolean }) => setExit(await doctorCommand(io(), opts)));

  program
    .command("audit-feed")
    .description("create the mirror of a tenant's events in its audit account (log in as <tenant>-audit-admin)")
    .argument("<tenant>", "the audited tenant")
    .action(async (tenant: string) => setExit(await auditFeedCommand(io(), tenant)));

  return program;
}
