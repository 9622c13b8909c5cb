// A command's way through the shell: read (inputs by reference included), decided by the pure
// decider on the fold between two of the engine's deliveries, its events appended, the inputs the
// decider asked for fetched and the decision made again, then its effects run and the message acked.
import {
  type AgentVersion,
  DEFAULT_MAX_INPUT_BYTES,
  decodeEvent,
  eventStreamOfPartition,
  type FleetCommand,
  type FleetEvent,
  foldSessionTreeEvents,
  partitionOf,
  type SessionTree,
  subjects,
} from "@fleet/protocol";
import { AgentStoreError, isStorageFullError, readSubject } from "@fleet/runtime";
import { childPromptRefusal } from "../decide/decide-child.js";
import { decideCommand } from "../decide/decide-command.js";
import { decideInput } from "../decide/decide-input.js";
import type { DecideContext, Decision } from "../decide/decision.js";
import { acceptsCommand, InputUnavailableError, keepParts, readCommand } from "../input-reader.js";
import { lastLifecycleRecord } from "../lifecycle/lifecycle-records.js";
import { OpenWorkNotStoredError } from "../open-work/open-work-index.js";
import { OpenWorkUnwritableError } from "../open-work/session-index-entry.js";
import type { CommandDelivery } from "../partition-intake.js";
import type { DraftEvent } from "../session-core/drafts.js";
import { loadSession } from "../snapshots/session-load.js";
import { summarizeBranch } from "../summarizer.js";
import { decideContextOf } from "./decide-context.js";
import { runEffect } from "./effects.js";
import { readArchiveHeader } from "./lifecycle-runner.js";
import { providerStreamFn, withContent } from "./llm-ports.js";
import { announceOwner, appendDraft, decideAsOwner, killShell, type SessionShell } from "./session-shell.js";

/** When a command whose inputs could not be read or copied is delivered again. */
const INPUT_RETRY_MS = 1_000;
/** When a command whose writes were not stored is delivered again. */
const WRITE_RETRY_MS = 2_000;

/**
 * Handles one delivered command. Contract: never throws for bad input; every command ends in
 * exactly one `command_accepted` or `command_rejected`, appended before any event the command
 * causes; the message is acked once its acceptance is durable (for a run-starting command, once the
 * run's first message is), and nak'ed when its inputs cannot be read now.
 */
export async function handleCommand(shell: SessionShell, delivery: CommandDelivery): Promise<void> {
  const deps = shell.deps;
  let read: Awaited<ReturnType<typeof readCommand>>;
  try {
    read = await readCommand(delivery, deps.blobs, {
      maxCommandBytes: deps.settings.maxCommandBytes,
      maxInputBytes: deps.settings.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES,
    });
  } catch (err) {
    // Its inputs cannot be read now (NATS): the command comes back later.
    shell.log.warn(
      { evt: "command_inputs_unavailable", err, streamSeq: delivery.streamSeq },
      "command inputs unreadable; retrying",
    );
    delivery.msg.nak(INPUT_RETRY_MS);
    return;
  }
  const { input, parts } = read;
  const commandId = input.ok ? input.command.id : input.commandId;
  shell.log.debug(
    { evt: "command_received", commandId, streamSeq: delivery.streamSeq, deliveries: delivery.msg.info.deliveryCount },
    "command received",
  );
  try {
    const engine = shell.engine;
    // The log is the truth: once `agent_end` is appended the run is over for every observer,
    // even while the engine settles in memory; the command is decided after it settled.
    if (engine.state.isStreaming && !shell.state.status.isStreaming) await engine.waitForIdle();
    const ctx = decideContextOf(shell);
    ctx.deliveries = delivery.msg.info.deliveryCount;
    // Deciding and appending happen between two of the engine's deliveries, on the fold of
    // everything appended so far; fetching a fork source or a summary happens outside.
    const decideAndAppend = () =>
      engine.exclusive(async (): Promise<Decision> => {
        const decision = await decideAsOwner(shell, () =>
          decideInput(shell.state, shell.sessionId, { kind: "command", input }, ctx),
        );
        if (decision.kind !== "decided") return decision;
        // An accepted command's parts are in `fleet_blobs` before its acceptance is in the log.
        if (parts.length > 0 && acceptsCommand(decision.events)) await keepParts(parts, deps.blobs);
        await appendDecided(shell, decision.events);
        return decision;
      });
    let decision = await decideAndAppend();
    while (decision.kind !== "decided" && decision.kind !== "after_creation") {
      await fetchNeeded(shell, decision, ctx);
      decision = await decideAndAppend();
    }
    if (decision.kind === "after_creation") {
      // Decided after the creation's redelivery completes it (acked, it would be rejected: no session).
      shell.log.warn(
        { evt: "command_after_creation", commandId, creation: decision.commandId },
        "the session's creation is not complete in the log; command retried later",
      );
      delivery.msg.nak(WRITE_RETRY_MS);
      return;
    }
    for (const effect of decision.effects) await runEffect(shell, effect);
  } catch (err) {
    if (err instanceof InputUnavailableError && !shell.dead) {
      shell.log.warn({ evt: "command_inputs_unavailable", err, commandId }, "command inputs not copied; retrying");
      delivery.msg.nak(INPUT_RETRY_MS);
      return;
    }
    // The lease was lost before the decision was appended (all of it, or all of its rest): the
    // command stays for the partition's next holder, whose redelivery decides or completes it
    // (acked, it would be lost); the session is dropped.
    if (err instanceof OpenWorkUnwritableError) {
      killShell(shell, `write failed: ${err.message}`);
      return;
    }
    // JetStream did not store a write the decision needed (its open-work entry, written before any
    // of its events; an input copy with no room): the command comes back, and its redelivery decides
    // or completes it (acked, it would be lost, as children's `abort`s were in chaos runs).
    if ((err instanceof OpenWorkNotStoredError || isStorageFullError(err)) && !shell.dead) {
      shell.log.warn(
        { evt: "command_write_not_stored", err, commandId },
        "a write was not stored; command retried later",
      );
      delivery.msg.nak(WRITE_RETRY_MS);
      return;
    }
    shell.log.error({ err, commandId }, "command failed");
    if (shell.dead) return;
  }
  ack(shell, delivery);
  void shell.replay.continue();
}

/** Fetches what the decider asked for (outside the engine's deliveries) into `ctx`. */
async function fetchNeeded(
  shell: SessionShell,
  decision: Exclude<Decision, { kind: "decided" } | { kind: "after_creation" }>,
  ctx: DecideContext,
): Promise<void> {
  const deps = shell.deps;
  switch (decision.kind) {
    case "needs_archive":
      ctx.archive = await readArchiveHeader(shell);
      return;
    case "needs_lifecycle_record":
      ctx.lastLifecycle = deps.lifecycle ? await lastLifecycleRecord(deps.jsm, shell.sessionId, deps.groups) : null;
      return;
    case "needs_agent_version":
      ctx.agentVersion = await readAgentVersion(shell, decision.name, decision.version);
      return;
    case "needs_fork_source": {
      const source = await readTree(shell, decision.sessionId);
      ctx.forkSource = source.config ? source : null;
      return;
    }
    case "needs_branch_summary":
      ctx.branchSummary = await summarizeBranch({
        streamFn: providerStreamFn(shell, decision.model.provider),
        model: decision.model,
        thinkingLevel: decision.thinkingLevel,
        messages: await withContent(shell, decision.messages),
        instructions: decision.instructions,
        now: deps.now,
      });
  }
}

/**
 * Decides a command of the shell's own (a replay's turn) as if delivered, and runs its effects;
 * nothing when its id already has an outcome in the log.
 */
export async function decideOwn(shell: SessionShell, command: FleetCommand): Promise<void> {
  const ctx = decideContextOf(shell);
  const effects = await shell.engine.exclusive(async () => {
    if (shell.state.commands.has(command.id) || shell.dead || shell.detached) return [];
    const decided = await decideAsOwner(shell, () =>
      decideCommand(shell.state, shell.sessionId, { ok: true, command }, ctx),
    );
    if (decided.kind !== "decided") return [];
    await appendDecided(shell, decided.events);
    return decided.effects;
  });
  for (const effect of effects) await runEffect(shell, effect);
}

/** Appends a decision's events in order, the owner announced first and the open-work entry held. */
async function appendDecided(shell: SessionShell, events: readonly DraftEvent[]): Promise<void> {
  if (events.length > 0) await announceOwner(shell);
  const append = async () => {
    for (const draft of events) await appendDraft(shell, draft);
  };
  await (shell.indexEntry ? shell.indexEntry.hold(append) : append());
  const parent = shell.state.parent;
  const sub = shell.deps.subAgents;
  const refused = parent && sub ? childPromptRefusal(shell.sessionId, events) : undefined;
  // A child that refused its parent's task answers at once (the parent would wait out its timeout).
  if (parent && refused) await sub?.childRefused(shell.sessionId, parent, refused);
}

/**
 * The version a command names (`null`: none, or an invalid record). A KV that cannot be read is
 * `InputUnavailableError`: the command is delivered again.
 */
async function readAgentVersion(
  shell: SessionShell,
  name: string,
  version: number | undefined,
): Promise<AgentVersion | null> {
  const agents = shell.deps.agents;
  if (!agents) return null;
  try {
    return await agents.get(name, version);
  } catch (err) {
    if (err instanceof AgentStoreError) {
      shell.log.warn({ evt: "agent_version_invalid", agent: name, version, err }, "agent version unreadable");
      return null;
    }
    throw new InputUnavailableError(`cannot read agent ${name} (${(err as Error).message})`, { cause: err });
  }
}

/**
 * Acks a handled command, unless the shell died or was detached meanwhile (its lease lost): what
 * the command began may not be in the log, and the next owner completes it from the redelivery.
 */
function ack(shell: SessionShell, delivery: CommandDelivery): void {
  if ((shell.dead || shell.detached) && !shell.removed) {
    shell.log.debug(
      { evt: "command_not_acked", streamSeq: delivery.streamSeq, why: shell.dead ? "dead" : "detached" },
      "command left for redelivery",
    );
    return;
  }
  delivery.msg.ack();
  shell.log.debug({ evt: "command_acked", streamSeq: delivery.streamSeq }, "command acked");
  shell.deps.metrics.commandLag.observe(Math.max(0, shell.deps.now() - delivery.time) / 1000);
}

/** Another session's tree (a fork's source): from its snapshot when snapshots are on, else its log. */
async function readTree(shell: SessionShell, sessionId: string): Promise<SessionTree> {
  const deps = shell.deps;
  const partition = partitionOf(sessionId, deps.partitions);
  if (deps.snapshots) {
    const { js, jsm, snapshots, logger, groups } = deps;
    return (await loadSession({ js, jsm, sessionId, partition, groups, snapshots, logger })).state.tree;
  }
  const events: FleetEvent[] = [];
  const subject = subjects.event(partition, sessionId);
  const stream = eventStreamOfPartition(partition, deps.groups ?? 1);
  for await (const rec of readSubject(deps.js, deps.jsm, stream, subject)) {
    const decoded = decodeEvent(rec.data);
    if (decoded.ok) events.push(decoded.value);
  }
  return foldSessionTreeEvents(events);
}
