// The records the invariant checkers read: logs, what the workload sent, tool side effects, store answers.
import type { FleetEvent, ToolRetryPolicy } from "@fleet/protocol";

/** The invariant groups of issue 13, counted separately in the report. */
export const INVARIANTS = {
  commands: "1 commands",
  log: "2 log shape",
  tools: "3 tool effects",
  store: "4 store = log",
  stuck: "5 nothing stuck",
  sse: "6 SSE = log",
  webhooks: "7 webhooks = log",
  schedule: "8 schedule slots",
  subAgents: "9 sub-agents",
  processes: "processes",
} as const;
export type Invariant = keyof typeof INVARIANTS;

export interface Violation {
  invariant: Invariant;
  sessionId?: string;
  /** A stable short name, e.g. `duplicate_event_id`. */
  kind: string;
  detail: string;
}

/** One session's log, decoded, in stream order. */
export interface SessionLog {
  sessionId: string;
  events: readonly FleetEvent[];
  /** Stored messages that did not decode. */
  invalid: number;
  /** Stream sequence of the last stored message read (0: none); absent in hand-built logs. */
  lastSeq?: number;
  /** Stream sequence of each event of `events` (same order); absent in hand-built logs. */
  seqs?: readonly number[];
}

/** A prompt the workload sent (once, or re-sent with the same id). */
export interface SentPrompt {
  sessionId: string;
  commandId: string;
  /** Publishes of this command id (1 = never re-sent). */
  sends: number;
  /** JetStream acknowledged at least one publish (the command is in FLEET_COMMANDS). */
  stored: boolean;
  /** The outcome the client saw, if any. */
  outcome?: "accepted" | "rejected";
  /** The client saw the run's `agent_end`. */
  done: boolean;
  /** The final prompt sent after the faults stopped (must complete). */
  probe: boolean;
}

/** An abort the workload sent a parent while its `agent` calls ran (re-sent with the same id). */
export interface SentAbort {
  sessionId: string;
  commandId: string;
  sends: number;
  stored: boolean;
  outcome?: "accepted" | "rejected";
}

/** Times each tool call ran, from its side effect (bash: lines appended; write: 1 when the file exists). */
export type Executions = ReadonlyMap<string, number>;

/** Retry policy of each tool the workload uses. */
export type ToolPolicies = Readonly<Record<string, ToolRetryPolicy>>;

/** What the session store answered for a session (the `ok` replies without `ok`), or why it did not. */
export interface StoreAnswer {
  sessionId: string;
  context?: unknown;
  tree?: unknown;
  error?: string;
}

/** One event frame an SSE client received: its `id:` (stream sequence), `event:` and the event's id. */
export interface SseReceived {
  seq: number;
  type: string;
  eventId: string;
}

/** One webhook POST the chaos receiver got (it may have answered it with an error). */
export interface WebhookReceived {
  /** The body's `seq`. */
  seq: number;
  sessionId: string;
  /** The body's event type. */
  type: string;
  /** The `Idempotency-Key` header. */
  key: string | undefined;
  /** Its `Fleet-Signature` verified with the webhook's secret. */
  signed: boolean;
  /** The receiver answered 2xx (the gateway may deliver it again only if its ack was lost). */
  accepted: boolean;
}
