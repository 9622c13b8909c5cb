import { decodeCommand } from "@fleet/protocol";
import type { CommandInput } from "./decision.js";

/** A command message as it arrives: its bytes, and its `Nats-Msg-Id` (or `seq:<n>` without one). */
export interface CommandBytes {
  data: Uint8Array;
  commandRef: string;
  hasMsgId: boolean;
}

/**
 * The message as the decider takes it: a decoded command, or the rejection an undecodable one earns.
 * A command over `maxBytes` is undecodable (`invalid`, naming the limit). An undecodable command is answered under its `Nats-Msg-Id`, else the id it carried, else `seq:<n>`.
 */
export function commandInput(message: CommandBytes, maxBytes?: number): CommandInput {
  const decoded = decodeCommand(message.data, maxBytes !== undefined ? { maxBytes } : {});
  if (decoded.ok) return { ok: true, command: decoded.value };
  return {
    ok: false,
    commandId: message.hasMsgId ? message.commandRef : (decoded.commandId ?? message.commandRef),
    commandType: decoded.commandType,
    code: decoded.code,
    reason: decoded.error,
  };
}
