// given events → when a command (or any input of the runtime core) → then events and effects:
// specs of the session decider, run without a server. The decided events are stamped and folded
// exactly as the shell appends them.
import {
  type FleetCommand,
  type FleetEvent,
  foldSessionEvents,
  type SessionState,
  sessionConfigWith,
  type UserMessage,
} from "@fleet/protocol";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  type EventInput,
  SESSION_ID,
  startOf,
  T0,
  textOf,
  userMessage,
} from "@fleet/protocol/testing";
import { expect } from "vitest";
import { decideCommand } from "../decide/decide-command.js";
import { decideInput, type RuntimeInput } from "../decide/decide-input.js";
import { decideRedelivered } from "../decide/decide-redelivered.js";
import type { CommandInput, DecideContext, Decision, Effect } from "../decide/decision.js";
import { stampDraft } from "../decide/stamp-draft.js";

/** The worker settings specs decide with: tools `read`, `bash`, `write`; ids `d1`, `d2`, … (skipping the log's). */
export const SPEC_DEFAULTS = sessionConfigWith({ model: { provider: "anthropic", modelId: "claude-spec" } });
export const SPEC_TOOLS: ReadonlySet<string> = new Set(["read", "bash", "write"]);

export const HELLO = userMessage("hello");
export const HI = assistantMessage([textOf("hi")]);
/** One finished run after `session_created`: user `hello`, assistant `hi` (command `c0`). */
export const ONE_RUN: EventInput[] = [
  { type: "command_accepted", commandId: "c0", commandType: "prompt" },
  { type: "agent_start" },
  { type: "turn_start" },
  { type: "message_start", message: HELLO },
  { type: "message_end", message: HELLO },
  { type: "message_start", message: startOf(HI) },
  { type: "message_end", message: HI },
  { type: "turn_end", message: HI, toolResults: [] },
  { type: "agent_end", messages: [HELLO, HI] },
];

/** A session after `ONE_RUN` whose second run (command `c1`) is in its first turn, `user` delivered. */
export const secondRunStarted = (user: UserMessage): EventInput[] => [
  { type: "session_created", config: CONFIG },
  ...ONE_RUN,
  { type: "command_accepted", commandId: "c1", commandType: "prompt" },
  { type: "agent_start" },
  { type: "turn_start" },
  { type: "message_start", message: user },
  { type: "message_end", message: user },
];

/** An event as a spec compares it: the wire event without `meta`. */
export type SpecEvent = Omit<FleetEvent, "meta">;

export interface Outcome {
  decision: Decision;
  /** The decided events as appended (full wire events), in order. */
  events: FleetEvent[];
  /** The session's fold after them. */
  state: SessionState;
  /** Asserts the appended events (without `meta`) and the effects. */
  then(expected: { events: readonly unknown[]; effects?: readonly Effect[] }): Outcome;
  /** Asserts one `command_rejected` with `code` (and `reason` when given), and no effect. */
  thenRejected(code: string, reason?: string | RegExp): Outcome;
}

export interface Given {
  readonly state: SessionState;
  readonly log: FleetEvent[];
  /** Decides `command` (a fresh one, or an undecodable input) against the log. */
  when(command: FleetCommand | CommandInput, context?: Partial<DecideContext>): Outcome;
  /** Decides a command whose id already has an outcome (a redelivery). */
  whenRedelivered(command: FleetCommand, context?: Partial<DecideContext>): Outcome;
  /** Decides any input of the runtime core (`decideInput`): a command, a provider chunk, a tool result, a timer. */
  whenInput(input: RuntimeInput, context?: Partial<DecideContext>): Outcome;
}

/** A command with the spec's session id and id `cmd-1` unless given. */
export function command<T extends FleetCommand["type"]>(
  type: T,
  fields: Omit<Extract<FleetCommand, { type: T }>, "type" | "id" | "sessionId"> & { id?: string } = {} as never,
): FleetCommand {
  return { id: "cmd-1", sessionId: SESSION_ID, ...fields, type } as FleetCommand;
}

/** The log `inputs` make (stamped with ids and timestamps by the protocol's log builder). */
export function given(...inputs: EventInput[]): Given {
  const builder = createLogBuilder(9);
  for (const input of inputs) builder.add(input);
  return givenLog(builder.events);
}

/** A log of wire events as they are (e.g. one a crash cut short). */
export function givenLog(log: FleetEvent[]): Given {
  const context = (overrides: Partial<DecideContext>): DecideContext => {
    // ids the log already holds are skipped, as fresh ids never collide in a real worker
    const used = new Set(log.flatMap((e) => [e.meta.id, ...("entry" in e && e.entry ? [e.entry.id] : [])]));
    let n = 0;
    const newId = (): string => {
      let id = `d${++n}`;
      while (used.has(id)) id = `d${++n}`;
      return id;
    };
    return {
      now: T0,
      newId,
      defaults: SPEC_DEFAULTS,
      isKnownTool: (name) => SPEC_TOOLS.has(name),
      ...overrides,
    };
  };
  const run = (decide: (state: SessionState, ctx: DecideContext) => Decision, overrides: Partial<DecideContext>) => {
    const state = foldSessionEvents(log);
    const decision = decide(state, context(overrides));
    const events: FleetEvent[] = [];
    if (decision.kind === "decided") {
      for (const draft of decision.events) {
        const event = stampDraft(state, draft, { sessionId: SESSION_ID, producer: "spec", now: T0 });
        foldSessionEvents([event], state);
        events.push(event);
      }
    }
    const outcome: Outcome = {
      decision,
      events,
      state,
      // biome-ignore lint/suspicious/noThenProperty: the spec's `then` step; an outcome is never awaited
      then(expected) {
        expect(decision.kind).toBe("decided");
        expect(events.map(withoutMeta)).toEqual(expected.events);
        expect(decision.kind === "decided" ? decision.effects : []).toEqual(expected.effects ?? []);
        return outcome;
      },
      thenRejected(code, reason) {
        expect(decision.kind).toBe("decided");
        expect(events).toHaveLength(1);
        const event = events[0];
        expect(event?.type).toBe("command_rejected");
        if (event?.type === "command_rejected") {
          expect(event.code).toBe(code);
          if (typeof reason === "string") expect(event.reason).toBe(reason);
          else if (reason) expect(event.reason).toMatch(reason);
        }
        expect(decision.kind === "decided" ? decision.effects : []).toEqual([]);
        return outcome;
      },
    };
    return outcome;
  };
  return {
    get state() {
      return foldSessionEvents(log);
    },
    log,
    when: (cmd, overrides = {}) =>
      run(
        (state, ctx) => decideCommand(state, SESSION_ID, "ok" in cmd ? cmd : { ok: true, command: cmd }, ctx),
        overrides,
      ),
    whenRedelivered: (cmd, overrides = {}) => run((state, ctx) => decideRedelivered(state, cmd, ctx), overrides),
    whenInput: (input, overrides = {}) => run((state, ctx) => decideInput(state, SESSION_ID, input, ctx), overrides),
  };
}

export function withoutMeta(event: FleetEvent): SpecEvent {
  const { meta: _meta, ...rest } = event;
  return rest as SpecEvent;
}
