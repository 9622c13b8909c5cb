// The shell of sub-agents (PROTOCOL "Sub-agents", change 57). Parent side: an `agent` call publishes
// its child's commands and waits for the result on the call's own result subject, like a runner's
// call (stored, so a new owner of the parent finds it). Child side: the child's owner publishes its
// progress (throttled) and, before its run's `agent_end`, its final answer to that subject.
import {
  AGENT_TOOL_NAME,
  type AgentMessage,
  type AgentVersion,
  agentToolDefinition,
  type ChildProgress,
  childSessionId,
  encodeCommand,
  encodeToolResultRecord,
  type FleetCommand,
  type FleetEvent,
  finalAssistantText,
  type ParentLink,
  parseAgentRef,
  partitionOf,
  type Spend,
  STREAMS,
  subjects,
  type ToolFinalRecord,
  toolErrorText,
} from "@fleet/protocol";
import type { AgentStore, StreamPublisher } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { ChildCallDecision, SubAgentLimits } from "../decide/decide-child.js";
import { decideChildClose } from "../decide/decide-child.js";
import type { ToolDefinition } from "../engine/types.js";
import type { RemoteToolResult, ToolDispatcher } from "../tool-dispatcher.js";
import { childAnswerMsgIds, childAnswerRecord, childRefusalRecord } from "./child-answer.js";
import { type ChildBudget, tighterLimits } from "./child-budget.js";
import { childAnswered, childCreation } from "./child-created.js";
import { lostAnswerCheck } from "./lost-answer.js";
import { confirmStored, type StoredCommand } from "./lost-commands.js";

export interface SubAgentSettings extends SubAgentLimits {
  /** How long a parent's call waits for its child's answer (each progress record restarts it). */
  timeoutMs: number;
  /** At most one progress record per child per this many ms. */
  progressMs: number;
}

export interface SubAgentPort {
  readonly settings: SubAgentSettings;
  /** The `agent` tool, its description naming the tenant's agents (refreshed in the background). */
  tool(): ToolDefinition;
  /**
   * Parent side: starts the decided child (once, whoever asks) and waits for its answer. Never
   * rejects. `budget`: the child's share of what the parent has left (`childBudget`); `spent`
   * refuses a fresh call, a share becomes the child's run limits (tighter than its agent's).
   */
  run(
    parentSessionId: string,
    toolCallId: string,
    decision: ChildCallDecision & { kind: "start" },
    signal: AbortSignal,
    onUpdate: (partial: unknown) => void,
    detach: AbortSignal,
    fresh: boolean,
    budget?: ChildBudget,
  ): Promise<RemoteToolResult>;
  /**
   * Parent side: the children of these `agent` calls get their close command (a resumed aborted run,
   * or an accepted abort, before the engine ends the calls). A call this port is running is skipped
   * unless `running`: its own close follows its start anyway (same id). A close decided before the
   * child's create or prompt leaves the child refusing them (`closedChild`).
   */
  closeChildren(parentSessionId: string, toolCallIds: readonly string[], opts?: { running?: boolean }): Promise<void>;
  /** Child side: the child refused its parent's prompt; the refusal is the call's error result. */
  childRefused(childId: string, link: ParentLink, reason: string): Promise<void>;
  /**
   * Child side: one appended event of a child session (progress, throttled). `writable` is the
   * owner's lease fence: progress held back to the end of its window is dropped when the lease is
   * no longer held then (a worker paused past its lease must not publish after the new owner's answer).
   */
  childEvent(childId: string, link: ParentLink, event: FleetEvent, writable?: () => boolean | Promise<boolean>): void;
  /** Child side: the child's run is about to end; its answer goes to the parent first. */
  childFinished(childId: string, link: ParentLink, end: ChildRunEnd): Promise<void>;
}

/** A child's run as it ends: `agent_end`'s messages and run id, and what the run spent. */
export interface ChildRunEnd {
  runId: string;
  /**
   * The lease epoch of the child's owner that ended the run: a new owner that ends it again (after a
   * crash between the answer and `agent_end`) stores the answer again, after any progress it published,
   * so the call's last record is an answer (same msgID, it would be a duplicate and stay hidden).
   */
  epoch: number;
  messages: readonly AgentMessage[];
  spent: Spend;
}

/** How many of a child's first events a lost close's outcome is looked for in (a direct get each). */
const CLOSE_SCAN_EVENTS = 512;

/** How long the tenant's agent list is reused for the tool description. */
const CATALOG_TTL_MS = 30_000;

export function createSubAgentPort(opts: {
  nc: NatsConnection;
  publisher: StreamPublisher;
  dispatcher: ToolDispatcher;
  agents: AgentStore | undefined;
  partitions: number;
  /**
   * To read a child's log (with the stream groups): the prompt is sent only once the child's
   * `session_created` is in it. Absent (specs without a server): sent right after the create.
   */
  events?: { jsm: JetStreamManager; groups: number };
  settings: SubAgentSettings;
  now: () => number;
  logger: Logger;
  /** How long a stored child command waits before its loss is looked for (`lost-commands.ts`). */
  copyCheckMs?: number;
  /** How long a child's log stands still before a missing answer is read from it (`lost-answer.ts`). */
  answerGraceMs?: number;
}): SubAgentPort {
  const { settings } = opts;
  let catalog: { name: string; description?: string | undefined }[] = [];
  let catalogAt = Number.NEGATIVE_INFINITY;
  let refreshing = false;
  const refresh = () => {
    if (refreshing || !opts.agents || opts.now() - catalogAt < CATALOG_TTL_MS) return;
    refreshing = true;
    const store = opts.agents;
    void (async () => {
      const listed = await store.list();
      const latest = await Promise.all(listed.map((a) => store.get(a.name, a.latest)));
      catalog = latest.flatMap((v) => (v ? [{ name: v.name, description: v.description }] : []));
      catalogAt = opts.now();
    })()
      .catch((err) => opts.logger.warn({ err }, "agent list for the agent tool could not be read"))
      .finally(() => {
        refreshing = false;
      });
  };
  refresh();

  /**
   * Per child: when its last progress record was published, and the latest event held back since
   * (published when the window ends: the last event before a quiet spell always goes out).
   */
  /** The `agent` calls `run` is executing now, by parent session and call id. */
  const running = new Set<string>();
  const callKey = (parentSessionId: string, toolCallId: string) => `${parentSessionId}\u0000${toolCallId}`;
  const progress = new Map<
    string,
    { at: number; held?: { link: ParentLink; event: FleetEvent }; timer?: NodeJS.Timeout }
  >();
  function publishProgress(link: ParentLink, childId: string, event: FleetEvent): void {
    const record: ChildProgress = { childSessionId: childId, event: event.type };
    if (event.type === "tool_execution_start") record.toolName = event.toolName;
    if (event.type === "message_end" && event.message.role === "assistant") {
      const text = finalAssistantText([event.message]);
      if (text) record.text = text.slice(0, 500);
    }
    const encoded = encodeToolResultRecord({ kind: "update", partialResult: record });
    // A core publish: progress is best effort, never waited for (the stream still stores it).
    if (encoded.ok) opts.nc.publish(subjects.toolResult(link.sessionId, link.toolCallId), encoded.bytes);
  }

  /** Stores `command` in FLEET_COMMANDS; the error text, or undefined once stored. */
  async function publishCommand(command: FleetCommand, onStored?: (stored: StoredCommand) => void) {
    const encoded = encodeCommand(command);
    if (!encoded.ok) return `Sub-agent could not be started: ${encoded.error}`;
    const subject = subjects.command(partitionOf(command.sessionId, opts.partitions), command.sessionId);
    const ack = await opts.publisher.publishDurably(subject, encoded.bytes, {
      msgID: command.id,
      stream: STREAMS.commands.name,
    });
    if (!ack.ok) return `Sub-agent could not be started: ${ack.error}`;
    onStored?.({ commandId: command.id, commandType: command.type, subject, data: encoded.bytes, seq: ack.seq });
    return undefined;
  }

  /**
   * A stored child command is stored again if lost (`confirmStored`; needs the stream,
   * `opts.events`) and the child's log holds no answer to it, until `signal` (the call's end, for
   * the create and the prompt; a close is watched after it): a create is answered by the child's
   * `session_created` or its rejection, a prompt by its outcome among the child's first events (it
   * is decided right after the creation), a close by its outcome among the first
   * `CLOSE_SCAN_EVENTS`.
   */
  const watchStored =
    (log: Logger, childId: string, signal?: AbortSignal) =>
    (stored: StoredCommand): void => {
      const events = opts.events;
      if (!events) return;
      const topology = { partitions: opts.partitions, groups: events.groups };
      const kind = stored.commandType;
      const handled =
        kind === "create_session"
          ? async () => (await childCreation(events.jsm, topology, childId, stored.commandId)).kind !== "absent"
          : () =>
              childAnswered(
                events.jsm,
                topology,
                childId,
                stored.commandId,
                kind === "prompt" ? undefined : CLOSE_SCAN_EVENTS,
              );
      const watching = {
        jsm: events.jsm,
        publisher: opts.publisher,
        stored,
        handled,
        signal,
        checkMs: opts.copyCheckMs,
      };
      void confirmStored(watching).then((outcome) => {
        if (outcome === "stored_again")
          log.info(
            { evt: "child_command_again", seq: stored.seq, commandId: stored.commandId },
            "child command stored again",
          );
      });
    };

  /**
   * The child's `create_session` as it is sent: refused when the named agent (or version) does not
   * exist (a refused `create_session` would leave the prompt alone); with the parent's share as its
   * run budget, tighter than the agent version's own.
   */
  async function childCreate(
    command: FleetCommand,
    budget: ChildBudget | undefined,
  ): Promise<{ ok: true; command: FleetCommand } | { ok: false; error: string }> {
    if (command.type !== "create_session") return { ok: true, command };
    let own: AgentVersion | null | undefined;
    if (command.agent !== undefined && opts.agents) {
      const ref = parseAgentRef(command.agent);
      own = ref ? await opts.agents.get(ref.name, ref.version) : null;
      if (!own) return { ok: false, error: `Sub-agent refused: agent ${command.agent} not found` };
    }
    if (budget?.kind !== "share") return { ok: true, command };
    const session = own?.settings.budget?.session;
    const run = tighterLimits(own?.settings.budget?.run, budget.run);
    const config = { ...command.config, budget: { run, ...(session ? { session } : {}) } };
    return { ok: true, command: { ...command, config } };
  }

  /**
   * Waits until the child's `session_created` is in its log (backing off to 1 s), its creation was
   * rejected, the call is aborted or detached, or `settings.timeoutMs` passed; the error text, or
   * undefined once it exists.
   */
  async function awaitCreated(
    childId: string,
    createId: string,
    signal: AbortSignal,
    detach: AbortSignal,
  ): Promise<string | undefined> {
    const events = opts.events;
    if (!events) return undefined;
    const deadline = opts.now() + settings.timeoutMs;
    let delay = 25;
    for (;;) {
      const found = await childCreation(
        events.jsm,
        { partitions: opts.partitions, groups: events.groups },
        childId,
        createId,
      ).catch(() => ({ kind: "absent" as const }));
      if (found.kind === "created") return undefined;
      if (found.kind === "rejected") return `Sub-agent could not be started: create_session rejected ${found.reason}`;
      if (signal.aborted || detach.aborted) return toolErrorText.aborted;
      if (opts.now() >= deadline)
        return `Sub-agent could not be started: child session ${childId} not created within ${settings.timeoutMs} ms`;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 1_000);
    }
  }

  /**
   * The call's `recover`: the child's answer read from its log once its record is overdue
   * (`lost-answer.ts`), stored on the call's subject for a later owner too. Needs the stream.
   */
  function answerFromLog(log: Logger, decision: ChildCallDecision & { kind: "start" }) {
    const events = opts.events;
    if (!events) return undefined;
    const check = lostAnswerCheck({
      jsm: events.jsm,
      topology: { partitions: opts.partitions, groups: events.groups },
      childId: decision.childId,
      now: opts.now,
      graceMs: opts.answerGraceMs,
    });
    return async (): Promise<RemoteToolResult | undefined> => {
      const found = await check().catch((err) => {
        log.warn({ err }, "child's log could not be read for its answer");
        return undefined;
      });
      if (!found) return undefined;
      log.warn(
        { evt: "child_answer_from_log", msgId: found.msgId },
        "child's answer was not stored: read from its log",
      );
      await storeResult(decision.link, found.msgId, found.record).catch((err) =>
        log.warn({ err }, "child's answer from its log not stored"),
      );
      const { content, details, isError } = found.record;
      return { content, isError, ...(details !== undefined ? { details } : {}) };
    };
  }

  /** Stores a child's answer as its parent's call's `result` record (retried through passing failures). */
  async function storeResult(link: ParentLink, msgID: string, record: ToolFinalRecord): Promise<void> {
    const encoded = encodeToolResultRecord(record);
    if (!encoded.ok) throw new Error(`sub-agent result cannot be encoded: ${encoded.error}`);
    const subject = subjects.toolResult(link.sessionId, link.toolCallId);
    const ack = await opts.publisher.publishDurably(subject, encoded.bytes, {
      msgID,
      stream: STREAMS.toolResults.name,
    });
    if (!ack.ok) throw new Error(`sub-agent result not stored: ${ack.error}`);
  }

  return {
    settings,
    tool() {
      refresh();
      return agentToolDefinition(catalog);
    },
    async run(parentSessionId, toolCallId, decision, signal, onUpdate, detach, fresh, budget) {
      // Nothing left of the parent's budget: a fresh call starts no child (a resumed one may have).
      if (fresh && budget?.kind === "spent") return { content: [{ type: "text", text: budget.reason }], isError: true };
      const key = callKey(parentSessionId, toolCallId);
      running.add(key);
      const log = opts.logger.child({ sessionId: parentSessionId, toolCallId, childSessionId: decision.childId });
      // Aborted when the call has ended: its create and prompt are no longer watched (`watchStored`).
      const ended = new AbortController();
      // The start in flight, if any. This call's own close is published after it settles. The
      // accepted abort has usually stored the same close already (`closeChildren` with `running`,
      // change 72), before the engine ended the call; a close decided before the child's create or
      // prompt makes the child refuse them (`closedChild`).
      let starting: Promise<unknown> = Promise.resolve();
      // The close in flight: the port's promise settles only once it is stored. A resumed run
      // whose cursor holds the abort sends it again (`closeChildren`).
      let closing: Promise<unknown> | undefined;
      const close = () => {
        if (closing || detach.aborted) return;
        const command = decideChildClose(decision.childId, decision.link.closePolicy);
        log.info({ evt: "child_close", policy: decision.link.closePolicy }, "parent aborted: closing child");
        closing = command
          ? starting
              .then(() => publishCommand(command, watchStored(log, decision.childId)))
              .then((failed) => failed && log.warn({ failed }, "child close not sent"))
              .catch((err) => log.warn({ err }, "child close not sent"))
          : Promise.resolve();
      };
      // Already aborted: an abort accepted before a resumed run reached this call. The child of a
      // resumed call may be running (a fresh call aborted before its start sent nothing).
      if (signal.aborted && !fresh) close();
      signal.addEventListener("abort", close, { once: true });
      try {
        return await opts.dispatcher.execute(
          {
            sessionId: parentSessionId,
            runId: decision.link.runId,
            toolCallId,
            toolName: AGENT_TOOL_NAME,
            args: undefined,
            timeoutMs: settings.timeoutMs,
            fresh,
            recover: answerFromLog(log, decision),
            start: () => {
              const started = (async () => {
                const [first, ...rest] = decision.commands;
                const create = await childCreate(first as FleetCommand, budget);
                if (!create.ok) return create.error;
                for (const command of [create.command, ...rest]) {
                  // Aborted meanwhile: the rest is not sent (a child already created is closed by `close`).
                  if (signal.aborted) return toolErrorText.aborted;
                  if (command.type === "prompt") {
                    const absent = await awaitCreated(decision.childId, create.command.id, signal, detach);
                    if (absent) return absent;
                  }
                  const failed = await publishCommand(command, watchStored(log, decision.childId, ended.signal));
                  if (failed) return failed;
                }
                log.info({ evt: "child_started" }, "sub-agent started");
                return undefined;
              })();
              starting = started.catch(() => undefined);
              return started;
            },
          },
          signal,
          onUpdate,
          detach,
        );
      } finally {
        ended.abort();
        signal.removeEventListener("abort", close);
        await closing;
        running.delete(key);
      }
    },
    async closeChildren(parentSessionId, toolCallIds, closeOpts) {
      for (const toolCallId of toolCallIds) {
        if (!closeOpts?.running && running.has(callKey(parentSessionId, toolCallId))) continue;
        const childId = childSessionId(parentSessionId, toolCallId);
        const command = decideChildClose(childId, settings.closePolicy);
        const log = opts.logger.child({ sessionId: parentSessionId, toolCallId, childSessionId: childId });
        const failed = command ? await publishCommand(command, watchStored(log, childId)) : undefined;
        log.info({ evt: "child_close", policy: settings.closePolicy, failed }, "aborted run: closing child");
      }
    },
    childEvent(childId, link, event, writable) {
      if (event.type === "agent_end" || event.type === "message_update") return;
      const now = opts.now();
      const state = progress.get(childId) ?? { at: Number.NEGATIVE_INFINITY };
      progress.set(childId, state);
      const wait = state.at + settings.progressMs - now;
      if (wait <= 0) {
        clearTimeout(state.timer);
        state.timer = undefined;
        state.held = undefined;
        state.at = now;
        publishProgress(link, childId, event);
        return;
      }
      state.held = { link, event };
      state.timer ??= setTimeout(() => {
        state.timer = undefined;
        const held = state.held;
        state.held = undefined;
        if (!held || progress.get(childId) !== state) return;
        state.at = opts.now();
        const publish = (ok: boolean) => {
          if (ok && progress.get(childId) === state) publishProgress(held.link, childId, held.event);
        };
        const ok = writable?.() ?? true;
        if (typeof ok === "boolean") publish(ok);
        else void ok.then(publish, () => undefined);
      }, wait).unref();
    },
    async childRefused(childId, link, reason) {
      await storeResult(link, childAnswerMsgIds.refused(childId), childRefusalRecord(childId, reason));
    },
    async childFinished(childId, link, end) {
      clearTimeout(progress.get(childId)?.timer);
      progress.delete(childId);
      const msgId = childAnswerMsgIds.result(childId, end.runId, end.epoch);
      await storeResult(link, msgId, childAnswerRecord(childId, end.messages, end.spent));
    },
  };
}
