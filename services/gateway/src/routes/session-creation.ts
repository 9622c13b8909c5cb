// The answer of a command that creates a session (create, fork, import): 201, an error, or 202.
import { type CommandOutcome, CommandRejectedError, isFleetError } from "@fleet/client";
import { apiError, rejectionStatus } from "../http/api-error.js";
import type { RouteOutput } from "../http/route-spec.js";

/** 201 `{sessionId, commandId, seq}` once accepted; its rejection as an error; 202 on timeout. */
export async function sessionCreation(
  sessionId: string,
  commandId: string,
  send: () => Promise<CommandOutcome>,
): Promise<RouteOutput> {
  try {
    const created = await send();
    return { status: 201, json: { sessionId, commandId, seq: created.seq } };
  } catch (err) {
    if (err instanceof CommandRejectedError) return apiError(rejectionStatus(err.code), err.code, err.reason);
    if (isFleetError(err) && err.kind === "timeout") {
      return { status: 202, json: { sessionId, commandId, status: "pending" } };
    }
    throw err;
  }
}
