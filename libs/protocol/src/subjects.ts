import { HOOK_SERVER_PATTERN, type RemoteHookName } from "./hook-decision.js";
import { isSessionId, isToolCallId, isToolName } from "./ids.js";
import { isScheduleId } from "./schedules/schedule-schemas.js";
import type { StoreOp } from "./store-queries.js";

/** Every subject Fleet uses. Builders validate their tokens; parsers return `null` for foreign subjects. */
export const subjects = {
  event: (partition: number, sessionId: string) => `fleet.evt.${part(partition)}.${token(sessionId, isSessionId)}`,
  eventsOfPartition: (partition: number) => `fleet.evt.${part(partition)}.*`,
  eventsAll: "fleet.evt.>" as const,
  eventsOfSession: (sessionId: string) => `fleet.evt.*.${token(sessionId, isSessionId)}`,
  /**
   * A stored event's copy on the live path (change 67): the event stream republishes each message
   * of `fleet.evt.<rest>` on `fleet.live.<rest>` once it is stored.
   */
  live: (partition: number, sessionId: string) => `fleet.live.${part(partition)}.${token(sessionId, isSessionId)}`,
  liveAll: "fleet.live.>" as const,
  command: (partition: number, sessionId: string) => `fleet.cmd.${part(partition)}.${token(sessionId, isSessionId)}`,
  commandsOfPartition: (partition: number) => `fleet.cmd.${part(partition)}.*`,
  commandsAll: "fleet.cmd.>" as const,
  toolCall: (toolName: string) => `fleet.tool.call.${token(toolName, isToolName)}`,
  toolCallsAll: "fleet.tool.call.>" as const,
  toolResult: (sessionId: string, toolCallId: string) =>
    `fleet.tool.result.${token(sessionId, isSessionId)}.${token(toolCallId, isToolCallId)}`,
  toolResultsOfSession: (sessionId: string) => `fleet.tool.result.${token(sessionId, isSessionId)}.*`,
  toolResultsAll: "fleet.tool.result.>" as const,
  toolCancel: (sessionId: string, toolCallId: string) =>
    `fleet.tool.cancel.${token(sessionId, isSessionId)}.${token(toolCallId, isToolCallId)}`,
  /** Every call's cancel subject (what a runner listens on). */
  toolCancelsAll: "fleet.tool.cancel.*.*" as const,
  /** A session's lifecycle records (deleted, archived, restored), never purged with the session. */
  lifecycle: (sessionId: string) => `fleet.evt.lifecycle.${token(sessionId, isSessionId)}`,
  /** Every session's lifecycle records. */
  lifecycleAll: "fleet.evt.lifecycle.*" as const,
  /** A session's entry in its partition's open-work index (change 41). */
  openWork: (partition: number, sessionId: string) =>
    `fleet.openwork.${part(partition)}.${token(sessionId, isSessionId)}`,
  /** Every entry of one partition's open-work index. */
  openWorkOfPartition: (partition: number) => `fleet.openwork.${part(partition)}.*`,
  /** Written once a holder scanned the partition's whole log into its index (sessions from before it). */
  openWorkScanned: (partition: number) => `fleet.openwork.${part(partition)}`,
  /** A schedule's log (change 55). */
  schedule: (scheduleId: string) => `fleet.sched.${token(scheduleId, isScheduleId)}`,
  schedulesAll: "fleet.sched.*" as const,
  store: (op: StoreOp) => `fleet.store.${op}`,
  /**
   * The store's notices that group g's events up to a sequence are in its indexes (change 74). Two
   * tokens after `store`, so the store's request subscription (`fleet.store.*`) never hears them.
   */
  storeApplied: (group: number) => `fleet.store.applied.${part(group)}`,
  storeAppliedAll: "fleet.store.applied.*" as const,
  hook: (hook: "before_tool_call" | "after_tool_call") => `fleet.hook.${hook}`,
  /** A named hook server's subject for one hook (change 53); its instances share queue group `hooks-<server>`. */
  hookServer: (hook: RemoteHookName, server: string) => `fleet.hook.${hook}.${token(server, isHookServer)}`,
} as const;

export const STORE_QUEUE_GROUP = "fleet-store";

/** A partition token: a non-negative integer, written in decimal without padding. */
function part(partition: number): string {
  if (!Number.isSafeInteger(partition) || partition < 0) throw new Error(`invalid partition: ${partition}`);
  return String(partition);
}

const isHookServer = (v: unknown) => typeof v === "string" && HOOK_SERVER_PATTERN.test(v);

function token(value: string, valid: (v: unknown) => boolean): string {
  if (!valid(value)) throw new Error(`invalid subject token: ${JSON.stringify(value)}`);
  return value;
}

export interface PartitionedSubject {
  partition: number;
  sessionId: string;
}

function parsePartitioned(prefix: "evt" | "cmd", subject: string): PartitionedSubject | null {
  const parts = subject.split(".");
  if (parts.length !== 4 || parts[0] !== "fleet" || parts[1] !== prefix) return null;
  const p = parts[2] ?? "";
  if (!/^(0|[1-9][0-9]*)$/.test(p)) return null;
  const sessionId = parts[3] ?? "";
  if (!isSessionId(sessionId)) return null;
  return { partition: Number(p), sessionId };
}

export const parseEventSubject = (subject: string) => parsePartitioned("evt", subject);

/**
 * The live-path subject (change 67) of a subject of the event streams: `fleet.evt.<rest>` →
 * `fleet.live.<rest>`; `null` for any other subject.
 */
export function liveSubjectOf(eventSubject: string): string | null {
  const prefix = "fleet.evt.";
  return eventSubject.startsWith(prefix) && eventSubject.length > prefix.length
    ? `fleet.live.${eventSubject.slice(prefix.length)}`
    : null;
}

/** The session of an open-work entry's subject `fleet.openwork.<p>.<sessionId>`, or `null`. */
export function parseOpenWorkSubject(subject: string): PartitionedSubject | null {
  const parts = subject.split(".");
  if (parts.length !== 4 || parts[0] !== "fleet" || parts[1] !== "openwork") return null;
  return parsePartitioned("evt", `fleet.evt.${parts[2]}.${parts[3]}`);
}

/** The session of a lifecycle record's subject `fleet.evt.lifecycle.<sessionId>`, or `null`. */
export function parseLifecycleSubject(subject: string): string | null {
  const parts = subject.split(".");
  if (parts.length !== 4 || parts[0] !== "fleet" || parts[1] !== "evt" || parts[2] !== "lifecycle") return null;
  return isSessionId(parts[3]) ? (parts[3] as string) : null;
}
export const parseCommandSubject = (subject: string) => parsePartitioned("cmd", subject);

/** The group of a store notice's subject `fleet.store.applied.<g>` (change 74), or `null`. */
export function parseStoreAppliedSubject(subject: string): number | null {
  const parts = subject.split(".");
  if (parts.length !== 4 || parts[0] !== "fleet" || parts[1] !== "store" || parts[2] !== "applied") return null;
  return /^(0|[1-9][0-9]*)$/.test(parts[3] as string) ? Number(parts[3]) : null;
}

export function parseToolCallSubject(subject: string): { toolName: string } | null {
  const parts = subject.split(".");
  if (parts.length !== 4 || parts[0] !== "fleet" || parts[1] !== "tool" || parts[2] !== "call") return null;
  return isToolName(parts[3]) ? { toolName: parts[3] as string } : null;
}

function parseSessionCall(kind: "result" | "cancel", subject: string) {
  const parts = subject.split(".");
  if (parts.length !== 5 || parts[0] !== "fleet" || parts[1] !== "tool" || parts[2] !== kind) return null;
  const [sessionId, toolCallId] = [parts[3], parts[4]];
  return isSessionId(sessionId) && isToolCallId(toolCallId) ? { sessionId, toolCallId } : null;
}
export const parseToolResultSubject = (subject: string) => parseSessionCall("result", subject);
export const parseToolCancelSubject = (subject: string) => parseSessionCall("cancel", subject);

/** msgID of a tool call: the stable identity used for deduplication. */
export const toolCallMsgId = (sessionId: string, toolCallId: string) => `${sessionId}.${toolCallId}`;

/** The schedule of a subject `fleet.sched.<scheduleId>`, or `null`. */
export function parseScheduleSubject(subject: string): string | null {
  const parts = subject.split(".");
  if (parts.length !== 3 || parts[0] !== "fleet" || parts[1] !== "sched") return null;
  return isScheduleId(parts[2]) ? (parts[2] as string) : null;
}
