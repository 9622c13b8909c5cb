// A command's inputs by reference (PROTOCOL "Large inputs"): the body of a command by reference is
// read from `fleet_inputs`, its parts there are checked, and its references moved to `fleet_blobs`,
// where an accepted command's parts are copied before its acceptance is appended.
import {
  type BlobRef,
  blobRefsIn,
  decodeCommandBodyRef,
  inputBodyName,
  inputPrefix,
  inputsMovedToBlobs,
  OBJECT_STORES,
  sizeLimitViolation,
} from "@fleet/protocol";
import type { BlobAccess } from "@fleet/runtime";
import { type CommandBytes, commandInput } from "./decide/command-input.js";
import type { CommandInput } from "./decide/decision.js";
import type { DraftEvent } from "./session-core/drafts.js";

const INPUTS = OBJECT_STORES.inputs.name;
const BLOBS = OBJECT_STORES.blobs.name;

/** A command as the decider takes it, and the parts (in `fleet_inputs`) to copy if it is accepted. */
export interface ReadCommand {
  input: CommandInput;
  parts: BlobRef[];
}

/** Reading or copying an input failed for a passing cause (NATS): the command is tried again later. */
export class InputUnavailableError extends Error {}

export interface InputLimits {
  /** FLEET_MAX_COMMAND_BYTES: an inline command. */
  maxCommandBytes?: number;
  /** FLEET_MAX_INPUT_BYTES: a command body by reference. */
  maxInputBytes: number;
}

/**
 * The command a message carries. A command by reference is read from `fleet_inputs` and must be the
 * one its envelope names. Its parts in `fleet_inputs` must lie under its own prefix
 * (`input/<sessionId>/<commandId>/`) and exist with the size (and digest) the reference gives; then
 * the decider sees them as references to `fleet_blobs` (same names). Anything else is a rejection
 * (`invalid`, saying what is wrong), never a throw; a read that fails for a passing cause throws
 * `InputUnavailableError`.
 */
export async function readCommand(message: CommandBytes, blobs: BlobAccess, limits: InputLimits): Promise<ReadCommand> {
  const byRef = decodeCommandBodyRef(message.data);
  const refused = (commandId: string, commandType: string, reason: string): ReadCommand => ({
    input: { ok: false, commandId, commandType, code: "invalid", reason },
    parts: [],
  });
  let input: CommandInput;
  if (byRef === undefined) input = commandInput(message, limits.maxCommandBytes);
  else if (!byRef.ok) return refused(message.commandRef, "unknown", `command by reference: ${byRef.error}`);
  else {
    const envelope = byRef.value;
    const fail = (reason: string) => refused(envelope.id, envelope.type, `command by reference: ${reason}`);
    const expected = inputBodyName(envelope.sessionId, envelope.id);
    if (envelope.bodyRef.bucket !== INPUTS || envelope.bodyRef.name !== expected) {
      return fail(`its bodyRef must be ${INPUTS}/${expected}`);
    }
    const over = sizeLimitViolation("its body", envelope.bodyRef.size, {
      bytes: limits.maxInputBytes,
      setting: "FLEET_MAX_INPUT_BYTES",
    });
    if (over) return fail(over);
    const body = await readOrThrow(blobs, envelope.bodyRef, limits.maxInputBytes);
    if (!body)
      return fail(`its body ${INPUTS}/${expected} does not exist (never written, or older than the bucket's 24 h)`);
    input = commandInput({ ...message, data: body }, limits.maxInputBytes);
    if (
      input.ok &&
      (input.command.id !== envelope.id ||
        input.command.type !== envelope.type ||
        input.command.sessionId !== envelope.sessionId)
    ) {
      return fail(
        `its body is command ${input.command.type} ${input.command.id} of ${input.command.sessionId}, not the envelope's`,
      );
    }
  }
  if (!input.ok) return { input, parts: [] };
  const command = input.command;
  const refs = blobRefsIn(command);
  const parts: BlobRef[] = [];
  for (const ref of refs) {
    if (ref.bucket === BLOBS) continue;
    const where = `${ref.bucket}/${ref.name}`;
    if (ref.bucket !== INPUTS)
      return refused(command.id, command.type, `content by reference to ${where}: not ${INPUTS} or ${BLOBS}`);
    if (!ref.name.startsWith(inputPrefix(command.sessionId, command.id))) {
      return refused(
        command.id,
        command.type,
        `content by reference to ${where}: not under this command's ${inputPrefix(command.sessionId, command.id)}`,
      );
    }
    let stored: Awaited<ReturnType<BlobAccess["info"]>>;
    try {
      stored = await blobs.info(ref);
    } catch (err) {
      throw new InputUnavailableError(`cannot read ${where}: ${(err as Error).message}`, { cause: err });
    }
    if (!stored)
      return refused(
        command.id,
        command.type,
        `content by reference to ${where}: it does not exist (never written, or older than the bucket's 24 h)`,
      );
    if (stored.size !== ref.size || (ref.digest !== undefined && ref.digest !== stored.digest)) {
      return refused(
        command.id,
        command.type,
        `content by reference to ${where}: it is not the object the reference describes (size or digest)`,
      );
    }
    parts.push(ref);
  }
  return { input: { ok: true, command: inputsMovedToBlobs(command) }, parts };
}

async function readOrThrow(blobs: BlobAccess, ref: BlobRef, maxBytes: number): Promise<Uint8Array | undefined> {
  try {
    return await blobs.read(ref, maxBytes);
  } catch (err) {
    throw new InputUnavailableError(`cannot read ${ref.bucket}/${ref.name}: ${(err as Error).message}`, { cause: err });
  }
}

/** Does a decision accept (or complete the acceptance of) a command, rather than reject it? */
export const acceptsCommand = (events: readonly DraftEvent[]): boolean =>
  events.length > 0 && !events.some((e) => e.body.type === "command_rejected");

/** Copies an accepted command's parts to `fleet_blobs` (each once); throws `InputUnavailableError`. */
export async function keepParts(parts: readonly BlobRef[], blobs: BlobAccess): Promise<void> {
  for (const part of parts) {
    let copied: boolean;
    try {
      copied = await blobs.copy(part, BLOBS);
    } catch (err) {
      throw new InputUnavailableError(
        `cannot copy ${part.bucket}/${part.name} to ${BLOBS}: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
    if (!copied) throw new InputUnavailableError(`${part.bucket}/${part.name} disappeared before it was copied`);
  }
}
