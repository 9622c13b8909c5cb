// A command as the bytes the SDK publishes: inline, with its large parts by reference, or whole by
// reference (PROTOCOL "Large inputs"). The parts and the body are written to `fleet_inputs` first.
import {
  FleetCommand,
  INLINE_COMMAND_BYTES,
  inputBodyName,
  OBJECT_STORES,
  planInputParts,
  validate,
  withDigests,
} from "@fleet/protocol";
import { type BlobAccess, isStorageFullError } from "@fleet/runtime";
import { FleetError, storageFullError } from "./errors.js";

const INPUTS = OBJECT_STORES.inputs.name;
const encoder = new TextEncoder();

/** What a command's publish carries, and how many of its bytes went to the object store. */
export interface CommandBytes {
  bytes: Uint8Array;
  /** Parts written by reference (0 when inline). */
  parts: number;
  /** True when the whole command went by reference. */
  byReference: boolean;
}

/**
 * Validates `command` and returns the payload to publish. Text and image blocks over
 * INLINE_CONTENT_BYTES are written to `fleet_inputs` and replaced by references; a command still
 * over INLINE_COMMAND_BYTES is written there whole and published as `{type, id, sessionId, ts,
 * bodyRef}`. Throws `FleetError` `invalid_input` for a command that fails its schema, `unavailable`
 * when the object store cannot take the inputs (`storage_full` when JetStream is full).
 */
export async function commandBytes(command: FleetCommand, blobs: BlobAccess): Promise<CommandBytes> {
  const checked = validate(FleetCommand, command);
  if (!checked.ok) throw new FleetError("invalid_input", "invalid", `${command.type}: ${checked.error}`);
  const plan = planInputParts(checked.value);
  const write = async (name: string, bytes: Uint8Array, mimeType: string) => {
    try {
      return await blobs.write(INPUTS, name, bytes, mimeType);
    } catch (err) {
      if (isStorageFullError(err)) throw storageFullError(`write input ${name} of ${command.type} ${command.id}`, err);
      throw new FleetError(
        "unavailable",
        "inputs",
        `cannot write input ${name} to object store ${INPUTS} (${(err as Error).message}); the command was not sent`,
        { cause: err },
      );
    }
  };
  const digests = new Map<string, string>();
  for (const part of plan.parts) digests.set(part.name, (await write(part.name, part.bytes, part.mimeType)).digest);
  const planned = digests.size > 0 ? withDigests(plan.command, digests) : plan.command;
  let json: string;
  try {
    json = JSON.stringify(planned);
  } catch (err) {
    throw new FleetError("invalid_input", "invalid", `${command.type}: cannot encode it (${(err as Error).message})`);
  }
  const bytes = encoder.encode(json);
  if (bytes.byteLength <= INLINE_COMMAND_BYTES) return { bytes, parts: plan.parts.length, byReference: false };
  const name = inputBodyName(command.sessionId, command.id);
  const body = await write(name, bytes, "application/json");
  const envelope = {
    type: command.type,
    id: command.id,
    sessionId: command.sessionId,
    ...(command.ts !== undefined ? { ts: command.ts } : {}),
    bodyRef: { bucket: INPUTS, name, size: body.size, digest: body.digest, mimeType: "application/json" },
  };
  return { bytes: encoder.encode(JSON.stringify(envelope)), parts: plan.parts.length, byReference: true };
}
