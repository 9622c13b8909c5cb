// A tiny stand-in for the loop service: consumes fleet.cmd.>, appends outcomes and a canned run to
// FLEET_EVENTS with proper meta, msgID and expect.lastSubjectSequence (as the real loop must).

import { newId } from "@fleet/client";
import {
  type CommandDecoded,
  decodeCommand,
  ENTRY_EVENT_TYPES,
  type EventBody,
  emptyUsage,
  encodeEvent,
  type FleetCommand,
  type FleetEvent,
  parseCommandSubject,
  STREAMS,
  sessionConfigWith,
  subjects,
} from "@fleet/protocol";
import { applyTopology, connectNats, lastSubjectSeq } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { AckPolicy, type ConsumerMessages, jetstream, jetstreamManager, type StreamConfig } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

/** An event body before `meta`, with `entry` left to the appender. */
type NoEntry = EventBody extends infer B ? (B extends { entry: unknown } ? Omit<B, "entry"> : never) : never;

export interface FakeLoop {
  /** Every command received, decoded, in arrival order. */
  readonly commands: FleetCommand[];
  stop(): Promise<void>;
}

/** The events a `prompt` to a new session produces, in order: outcome, creation, a one-turn run. */
export const FAKE_RUN_TYPES = [
  "command_accepted",
  "session_created",
  "agent_start",
  "turn_start",
  "message_start",
  "message_end",
  "message_start",
  "message_update",
  "message_update",
  "message_end",
  "turn_end",
  "agent_end",
];

export interface FakeLoopServer {
  server: NatsServer;
  loop: FakeLoop;
  /** `applyTopology`'s drift lines. */
  drift: string[];
  /** Stops the fake loop, its connection and the server. */
  stop(): Promise<void>;
}

/**
 * A fresh nats-server with Fleet's topology (4 partitions) and a fake loop consuming its commands.
 * `republish: false` makes FLEET_EVENTS as a log from before change 67 has it (no republish).
 */
export async function startFakeLoopServer(opts: { republish?: boolean } = {}): Promise<FakeLoopServer> {
  const server = await startNats();
  try {
    const nc = await connectNats({ url: server.url, name: "fake-loop" });
    if (opts.republish === false) {
      const { republish: _, ...before67 } = STREAMS.events;
      const config = { ...before67, subjects: [...before67.subjects] } as unknown as StreamConfig;
      await (await jetstreamManager(nc)).streams.add(config);
    }
    const { drift } = await applyTopology(nc, { partitions: 4 });
    const loop = await startFakeLoop(nc, 4);
    return {
      server,
      loop,
      drift,
      async stop() {
        await loop.stop();
        await nc.close();
        await server.stop();
      },
    };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

const DEFAULT_CONFIG = sessionConfigWith({
  model: { provider: "anthropic", modelId: "fake-model" },
  systemPrompt: "You are a test.",
});

/**
 * Behaviour: `create_session` of an existing session → `conflict`; `prompt` with text `reject me` →
 * `invalid`; `prompt` with text `say nothing` → no outcome at all; any other `prompt` → accepted and a
 * one-turn run answering `echo: <text>` (with two text deltas); `navigate` to an id that is not an
 * entry → `not_found`; every other command → accepted.
 */
export async function startFakeLoop(nc: NatsConnection, partitions: number): Promise<FakeLoop> {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const name = `fake-loop-${newId().slice(-8)}`;
  await jsm.consumers.add(STREAMS.commands.name, {
    durable_name: name,
    filter_subject: "fleet.cmd.>",
    ack_policy: AckPolicy.Explicit,
  });
  const consumer = await js.consumers.get(STREAMS.commands.name, name);
  const messages: ConsumerMessages = await consumer.consume({ max_messages: 64 });
  const commands: FleetCommand[] = [];
  const lastSeq = new Map<string, number>();
  const leaf = new Map<string, string | null>();
  const entryIds = new Set<string>();

  const append = async (sessionId: string, body: EventBody | NoEntry, runId?: string): Promise<number> => {
    const isEntry = (ENTRY_EVENT_TYPES as readonly string[]).includes(body.type);
    const subject = subjects.event(Number(subjectPartition(sessionId, partitions)), sessionId);
    const last = lastSeq.get(sessionId) ?? (await lastSubjectSeq(jsm, STREAMS.events.name, subject));
    const id = newId();
    const withEntry = isEntry ? { ...body, entry: { id, parentId: leaf.get(sessionId) ?? null } } : body;
    const event = {
      ...withEntry,
      meta: { v: 1, id, sessionId, ts: Date.now(), producer: name, ...(runId ? { runId } : {}) },
    } as FleetEvent;
    const encoded = encodeEvent(event);
    if (!encoded.ok) throw new Error(`fake loop built an invalid ${body.type}: ${encoded.error}`);
    const ack = await js.publish(subject, encoded.bytes, { msgID: id, expect: { lastSubjectSequence: last } });
    lastSeq.set(sessionId, ack.seq);
    if (isEntry) {
      leaf.set(sessionId, id);
      entryIds.add(id);
    }
    return ack.seq;
  };

  const handle = async (sessionId: string, decoded: CommandDecoded): Promise<void> => {
    if (!decoded.ok) {
      await append(sessionId, {
        type: "command_rejected",
        commandId: decoded.commandId ?? "unknown",
        commandType: decoded.commandType,
        code: decoded.code,
        reason: decoded.error,
      });
      return;
    }
    const command = decoded.value;
    commands.push(command);
    const outcome = { commandId: command.id, commandType: command.type };
    const subject = subjects.event(subjectPartition(sessionId, partitions), sessionId);
    const exists = (lastSeq.get(sessionId) ?? (await lastSubjectSeq(jsm, STREAMS.events.name, subject))) > 0;
    if (command.type === "create_session") {
      if (exists) {
        await append(sessionId, { type: "command_rejected", ...outcome, code: "conflict", reason: "session exists" });
        return;
      }
      await append(sessionId, { type: "command_accepted", ...outcome });
      await append(sessionId, {
        type: "session_created",
        config: { ...DEFAULT_CONFIG, ...command.config },
        ...(command.forkFrom ? { forkedFrom: command.forkFrom } : {}),
      });
      return;
    }
    if (command.type === "prompt") {
      if (command.text === "say nothing") return;
      if (command.text === "reject me") {
        await append(sessionId, {
          type: "command_rejected",
          ...outcome,
          code: "invalid",
          reason: "rejected on request",
        });
        return;
      }
      await append(sessionId, { type: "command_accepted", ...outcome });
      if (!exists) await append(sessionId, { type: "session_created", config: { ...DEFAULT_CONFIG } });
      await run(sessionId, command.text ?? "");
      return;
    }
    if (command.type === "navigate" && command.targetId !== null && !entryIds.has(command.targetId)) {
      const reason = `Entry ${command.targetId} not found`;
      await append(sessionId, { type: "command_rejected", ...outcome, code: "not_found", reason });
      return;
    }
    await append(sessionId, { type: "command_accepted", ...outcome });
  };

  const run = async (sessionId: string, text: string): Promise<void> => {
    const runId = newId();
    const ts = Date.now();
    const user = { role: "user" as const, content: [{ type: "text" as const, text }], timestamp: ts };
    const reply = `echo: ${text}`;
    const half = Math.ceil(reply.length / 2);
    const start = {
      role: "assistant" as const,
      content: [],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "fake-model",
      usage: emptyUsage(),
      stopReason: "stop" as const,
      timestamp: ts,
    };
    const usage = emptyUsage();
    Object.assign(usage, { input: 7, output: 3, totalTokens: 10 });
    usage.cost.total = 0.0001;
    const final = { ...start, content: [{ type: "text" as const, text: reply }], usage };
    await append(sessionId, { type: "agent_start" }, runId);
    await append(sessionId, { type: "turn_start" }, runId);
    await append(sessionId, { type: "message_start", message: user }, runId);
    await append(sessionId, { type: "message_end", message: user }, runId);
    await append(sessionId, { type: "message_start", message: start }, runId);
    await append(
      sessionId,
      {
        type: "message_update",
        deltas: [
          { type: "text_start", contentIndex: 0 },
          { type: "text_delta", contentIndex: 0, delta: reply.slice(0, half) },
        ],
      },
      runId,
    );
    await append(
      sessionId,
      {
        type: "message_update",
        deltas: [
          { type: "text_delta", contentIndex: 0, delta: reply.slice(half) },
          { type: "text_end", contentIndex: 0, content: reply },
        ],
      },
      runId,
    );
    await append(sessionId, { type: "message_end", message: final }, runId);
    await append(sessionId, { type: "turn_end", message: final, toolResults: [] }, runId);
    await append(sessionId, { type: "agent_end", messages: [user, final] }, runId);
  };

  const done = (async () => {
    for await (const m of messages) {
      const target = parseCommandSubject(m.subject);
      if (target) await handle(target.sessionId, decodeCommand(m.data));
      m.ack();
    }
  })();

  return {
    commands,
    stop: async () => {
      await messages.close();
      await done;
      await jsm.consumers.delete(STREAMS.commands.name, name).catch(() => undefined);
    },
  };
}

function subjectPartition(sessionId: string, partitions: number): number {
  // Same function as the client; kept explicit here so the fake loop does not trust the SDK.
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(sessionId)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return (hash >>> 0) % partitions;
}
