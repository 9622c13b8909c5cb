import { decodeToolResultRecord, STREAMS, subjects } from "@fleet/protocol";
import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import { type CallId, RUNNER_ID_HEADER } from "./call-records.js";

/**
 * What FLEET_TOOL_RESULTS says about one call, from its last record:
 * - `none`: nothing written yet;
 * - `result`: finished (never run it again);
 * - `running`: a `started`/`update` was written by `runnerId` (from the record's header) and no result;
 * - `unknown`: the last record is unreadable (treated like a run by a runner that is gone).
 * `seq` is the stream sequence of that last record (0 for `none`), the base of the next claim.
 */
export type CallState =
  | { kind: "none"; seq: 0 }
  | { kind: "result"; seq: number }
  | { kind: "running"; seq: number; runnerId: string | undefined }
  | { kind: "unknown"; seq: number };

export function callStateOf(msg: Pick<StoredMsg, "seq" | "data" | "header"> | null): CallState {
  if (!msg) return { kind: "none", seq: 0 };
  const decoded = decodeToolResultRecord(msg.data);
  if (!decoded.ok) return { kind: "unknown", seq: msg.seq };
  if (decoded.value.kind === "result") return { kind: "result", seq: msg.seq };
  return { kind: "running", seq: msg.seq, runnerId: msg.header?.get(RUNNER_ID_HEADER) || undefined };
}

/** Reads the last record of a call: direct get when the stream allows it, the stream API otherwise. */
export function createCallStateReader(jsm: JetStreamManager) {
  let direct = true;
  return async function readCallState(call: CallId): Promise<CallState> {
    const query = { last_by_subj: subjects.toolResult(call.sessionId, call.toolCallId) };
    if (direct) {
      try {
        return callStateOf(await jsm.direct.getMessage(STREAMS.toolResults.name, query));
      } catch {
        direct = false;
      }
    }
    return callStateOf(await jsm.streams.getMessage(STREAMS.toolResults.name, query));
  };
}
