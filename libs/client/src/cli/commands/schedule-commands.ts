// `fleet schedule create|list|show|pause|resume|trigger|rm|history` (PROTOCOL "Schedules"): the
// tenant's schedules through the SDK's `client.schedules`.
import { describeScheduleEvent, type ScheduleDefinitionInput, type ScheduleView } from "@fleet/protocol";
import { type Command, InvalidArgumentError, Option } from "commander";
import type { FleetClient } from "../../fleet-client.js";
import { CliError, EXIT } from "../cli-error.js";
import { withClient } from "../connect.js";
import type { CliIo } from "../io.js";
import { outStyle } from "../io.js";
import { readJsonArgument } from "./approval-commands.js";

export interface ScheduleCreateFlags {
  cron?: string;
  tz?: string;
  every?: string;
  at?: string;
  prompt: string;
  session?: string;
  create?: string;
  overlap?: ScheduleDefinitionInput["overlap"];
  catchup?: string;
  start?: string;
  end?: string;
  paused?: boolean;
  note?: string;
  json?: boolean;
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `5m`, `1h`, `250ms`, or a number of milliseconds. */
export function parseDuration(value: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError("a duration like 30s, 5m, 1h or 250ms");
  return Math.round(Number(m[1]) * (UNITS[m[2] ?? "ms"] ?? 1));
}

/** An ISO 8601 time (with its offset or Z), or `+<duration>` from now. */
export function parseTime(value: string, now: number): number {
  if (value.startsWith("+")) return now + parseDuration(value.slice(1));
  const ms = Date.parse(value);
  if (Number.isNaN(ms))
    throw new CliError(`not a time: ${value} (ISO 8601, e.g. 2026-12-24T09:00:00Z, or +10m)`, EXIT.usage);
  return ms;
}

/** The definition the flags describe: exactly one of --cron, --every, --at. */
export function definitionOf(scheduleId: string, f: ScheduleCreateFlags, now: number): ScheduleDefinitionInput {
  const specs = [f.cron, f.every, f.at].filter((x) => x !== undefined);
  if (specs.length !== 1) throw new CliError("give exactly one of --cron, --every and --at", EXIT.usage);
  if (f.tz !== undefined && f.cron === undefined) throw new CliError("--tz goes with --cron", EXIT.usage);
  if (f.create !== undefined && f.session !== undefined)
    throw new CliError("--create is for new sessions; it does not go with --session", EXIT.usage);
  const spec: ScheduleDefinitionInput["spec"] =
    f.cron !== undefined
      ? { kind: "cron", cron: f.cron, ...(f.tz !== undefined ? { timezone: f.tz } : {}) }
      : f.every !== undefined
        ? { kind: "every", everyMs: parseDuration(f.every) }
        : { kind: "at", at: parseTime(f.at as string, now) };
  const target: ScheduleDefinitionInput["target"] =
    f.session !== undefined
      ? { kind: "session", sessionId: f.session, prompt: f.prompt }
      : {
          kind: "new_session",
          prompt: f.prompt,
          ...(f.create !== undefined
            ? { create: readJsonArgument(f.create, "--create") as Record<string, never> }
            : {}),
        };
  return {
    scheduleId,
    spec,
    target,
    ...(f.overlap !== undefined ? { overlap: f.overlap } : {}),
    ...(f.catchup !== undefined ? { catchupWindowMs: parseDuration(f.catchup) } : {}),
    ...(f.start !== undefined ? { startAt: parseTime(f.start, now) } : {}),
    ...(f.end !== undefined ? { endAt: parseTime(f.end, now) } : {}),
    ...(f.paused ? { paused: true } : {}),
    ...(f.note !== undefined ? { note: f.note } : {}),
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

function specText(v: ScheduleView): string {
  const s = v.definition.spec;
  if (s.kind === "cron") return `cron "${s.cron}" ${s.timezone ?? "UTC"}`;
  if (s.kind === "every") return `every ${s.everyMs} ms`;
  return `at ${iso(s.at)}`;
}

function targetText(v: ScheduleView): string {
  const t = v.definition.target;
  return t.kind === "session" ? `session ${t.sessionId}` : "a new session per fire";
}

function writeView(io: CliIo, v: ScheduleView, full: boolean) {
  const style = outStyle(io);
  const state = v.paused ? style.bold("paused") : "active";
  io.stdout.write(
    `${style.bold(v.scheduleId)}  ${state}  ${specText(v)} → ${targetText(v)}  overlap ${v.definition.overlap}\n`,
  );
  if (!full) {
    if (v.nextFires[0] !== undefined) io.stdout.write(`  next ${iso(v.nextFires[0])}\n`);
    return;
  }
  if (v.pauseNote) io.stdout.write(`  note      ${v.pauseNote}\n`);
  io.stdout.write(`  catch-up  ${v.definition.catchupWindowMs} ms\n`);
  if (v.definition.startAt !== undefined) io.stdout.write(`  start     ${iso(v.definition.startAt)}\n`);
  if (v.definition.endAt !== undefined) io.stdout.write(`  end       ${iso(v.definition.endAt)}\n`);
  const c = v.counts;
  io.stdout.write(
    `  slots     ${c.fired} fired, ${c.skipped} skipped, ${c.missed} missed, ${c.failed} failed, ${c.buffered} buffered\n`,
  );
  if (v.lastFire) io.stdout.write(`  last fire ${iso(v.lastFire.slot.at)} → ${v.lastFire.sessionId}\n`);
  if (v.buffered) io.stdout.write(`  buffered  ${iso(v.buffered.at)}\n`);
  for (const t of v.nextFires) io.stdout.write(`  next      ${iso(t)}\n`);
}

/** Adds `fleet schedule …` to the program. */
export function addScheduleCommands(program: Command, io: () => CliIo, setExit: (code: number) => void) {
  const schedule = program.command("schedule").description("schedules: prompts fired by cron, interval or time");
  const json = (v: unknown, i: CliIo) => i.stdout.write(`${JSON.stringify(v)}\n`);
  schedule
    .command("create")
    .description("create a schedule (exactly one of --cron, --every, --at)")
    .argument("<scheduleId>", "1-64 characters of A-Z a-z 0-9 _ -")
    .requiredOption("-p, --prompt <text>", "the prompt each fire sends")
    .option("--cron <expr>", 'cron expression, 5 or 6 fields (seconds first), e.g. "0 9 * * 1-5"')
    .option("--tz <zone>", "IANA time zone of --cron (default UTC)")
    .option("--every <duration>", "interval, e.g. 30s, 15m, 1h")
    .option("--at <time>", "one fire at an ISO time, or +<duration> from now")
    .option("-s, --session <sessionId>", "prompt this existing session (default: a new session per fire)")
    .option("--create <json>", "create_session options of each new session (inline JSON or @file)")
    .addOption(
      new Option("--overlap <policy>", "while the previous fire's run is open (default skip)").choices([
        "skip",
        "buffer_one",
        "allow_all",
        "cancel_other",
      ]),
    )
    .option("--catchup <duration>", "how late a slot may still fire after downtime (default 60s, at least 10s)")
    .option("--start <time>", "no fire before (ISO or +duration)")
    .option("--end <time>", "no fire after (ISO or +duration)")
    .option("--paused", "create it paused")
    .option("--note <text>", "a note kept with it")
    .option("--json", "print JSON")
    .action(async (id: string, f: ScheduleCreateFlags) => {
      const i = io();
      setExit(
        await withClient(i, async (client) => {
          const view = await client.schedules.create(definitionOf(id, f, Date.now()));
          if (f.json) json(view, i);
          else writeView(i, view, true);
          return 0;
        }),
      );
    });
  schedule
    .command("list")
    .description("the tenant's schedules and their next fire")
    .option("--json", "print JSON")
    .action(async (o: { json?: boolean }) => {
      const i = io();
      setExit(
        await withClient(i, async (client) => {
          const views = await client.schedules.list();
          if (o.json) json(views, i);
          else if (views.length === 0) i.stdout.write("no schedules\n");
          else for (const v of views) writeView(i, v, false);
          return 0;
        }),
      );
    });
  const one = (name: string, description: string, run: (id: string, o: Record<string, unknown>) => Promise<number>) =>
    schedule
      .command(name)
      .description(description)
      .argument("<scheduleId>", "schedule")
      .option("--json", "print JSON")
      .action(async (id: string, o: Record<string, unknown>) => setExit(await run(id, o)));
  const viewCall =
    (call: (id: string, o: Record<string, unknown>, c: FleetClient) => Promise<ScheduleView>) =>
    (id: string, o: Record<string, unknown>) => {
      const i = io();
      return withClient(i, async (client) => {
        const view = await call(id, o, client);
        if (o.json) json(view, i);
        else writeView(i, view, true);
        return 0;
      });
    };
  one(
    "show",
    "a schedule: state, counts, last fire and next fires",
    viewCall((id, _o, c) => c.schedules.get(id)),
  );
  one(
    "pause",
    "pause: slots pass without firing until resumed",
    viewCall((id, o, c) =>
      c.schedules.pause(id, { by: "cli", ...(typeof o.note === "string" ? { note: o.note } : {}) }),
    ),
  ).option("--note <text>", "why");
  one(
    "resume",
    "resume from now on",
    viewCall((id, _o, c) => c.schedules.resume(id, { by: "cli" })),
  );
  one("trigger", "fire now (under the overlap policy, paused or not)", (id, o) => {
    const i = io();
    return withClient(i, async (client) => {
      const t = await client.schedules.trigger(id, { by: "cli" });
      if (o.json) json(t, i);
      else i.stdout.write(`trigger ${t.triggerId} asked; the scheduler fires it within its tick\n`);
      return 0;
    });
  });
  one("rm", "delete a schedule and its history", (id) => {
    const i = io();
    return withClient(i, async (client) => {
      await client.schedules.remove(id);
      i.stdout.write(`schedule ${id} deleted\n`);
      return 0;
    });
  });
  one("history", "every slot's outcome, newest first (fired, skipped, missed, failed) and why", (id, o) => {
    const i = io();
    return withClient(i, async (client) => {
      const items = await client.schedules.history(id, { limit: typeof o.limit === "number" ? o.limit : 50 });
      if (o.json) json(items, i);
      else for (const it of items) i.stdout.write(`${describeScheduleEvent(it.event)}\n`);
      return 0;
    });
  }).option("-n, --limit <n>", "how many (default 50)", (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("must be a positive integer");
    return n;
  });
}
