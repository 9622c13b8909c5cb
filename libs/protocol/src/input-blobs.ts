// Large inputs by reference: a command's text and image blocks over INLINE_CONTENT_BYTES go to the
// object store before the command (`fleet_inputs`), and so does a whole command still over
// INLINE_COMMAND_BYTES. Pure: what goes where, the names, the shapes and the walks over content.
// Writing and reading the objects is the SDK's, the loop's, the store's and the gateway's.
import { z } from "zod";
import { BlobRef } from "./blob-ref.js";
import type { FleetCommand } from "./commands.js";
import type { ImageContent, TextContent } from "./content.js";
import { SessionId } from "./ids.js";
import { OBJECT_STORES } from "./jetstream-config.js";
import { MAX_MESSAGE_BYTES } from "./size-limits.js";

/**
 * A text block longer than this (UTF-8 bytes), or an image whose base64 is, goes by reference: the
 * events that carry a message (`command_accepted`, `message_start`, `message_end`, `queue_update`,
 * `agent_end`) then stay small however large the input.
 */
export const INLINE_CONTENT_BYTES = 32 * 1024;
/** A command whose JSON is still larger than this once its parts are references goes whole by reference. */
export const INLINE_COMMAND_BYTES = MAX_MESSAGE_BYTES - 64 * 1024;
/** Largest command body by reference the loop reads (`FLEET_MAX_INPUT_BYTES`; default 64 MiB). */
export const DEFAULT_MAX_INPUT_BYTES = 64 * 1024 * 1024;
export const MAX_INPUT_BYTES_SETTING = "FLEET_MAX_INPUT_BYTES";
/** Characters of a text by reference kept inline as its preview. */
export const TEXT_PREVIEW_CHARS = 512;

const INPUTS = OBJECT_STORES.inputs.name;
const BLOBS = OBJECT_STORES.blobs.name;

/** Where a command's inputs are written: `input/<sessionId>/<commandId>/`. */
export const inputPrefix = (sessionId: string, commandId: string) => `input/${sessionId}/${commandId}/`;
/** The i-th part (0-based, in the order `mapContentBlocks` visits them). */
export const inputPartName = (sessionId: string, commandId: string, index: number) =>
  `${inputPrefix(sessionId, commandId)}${index}`;
/** The whole command's JSON. */
export const inputBodyName = (sessionId: string, commandId: string) =>
  `${inputPrefix(sessionId, commandId)}command.json`;

/**
 * The message published for a command by reference: its envelope and where its whole JSON is
 * (`fleet_inputs`, `inputBodyName`). The command read from there must have the same `type`, `id` and
 * `sessionId`.
 */
export const CommandBodyRef = z
  .object({
    type: z.string().min(1).max(64),
    id: z.string().min(1).max(256),
    sessionId: SessionId,
    ts: z.number().int().nonnegative().optional(),
    bodyRef: BlobRef,
  })
  .strict();
export type CommandBodyRef = z.infer<typeof CommandBodyRef>;

/**
 * A session-store reply larger than the server's `max_payload`: written to `fleet_inputs` (it ages
 * out with the bucket) under `reply/<id>`, and answered with this. The object is the reply's JSON.
 */
export const StoreReplyRef = z.object({ ok: z.literal(true), replyRef: BlobRef }).strict();
export type StoreReplyRef = z.infer<typeof StoreReplyRef>;
export const storeReplyName = (id: string) => `reply/${id}`;

/** A text or image block whose content is in an object. */
export type BlobBlock = (TextContent | ImageContent) & { blob: BlobRef };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

export function isBlobBlock(value: unknown): value is BlobBlock {
  if (!isRecord(value) || (value.type !== "text" && value.type !== "image")) return false;
  const ref = value.blob;
  return isRecord(ref) && typeof ref.bucket === "string" && typeof ref.name === "string";
}

/**
 * Pure: `value` with every text and image block (anywhere inside it, by shape: `{type: "text" |
 * "image", …}`) replaced by `fn(block)`. Unchanged branches keep their identity; `value` itself is
 * never modified. Strings as message content are not blocks (see `splitStringContent`).
 */
export function mapContentBlocks<T>(
  value: T,
  fn: (block: TextContent | ImageContent) => TextContent | ImageContent,
): T {
  const visit = (v: unknown): unknown => {
    if (Array.isArray(v)) {
      let changed = false;
      const out = v.map((item) => {
        const next = visit(item);
        if (next !== item) changed = true;
        return next;
      });
      return changed ? out : v;
    }
    if (!isRecord(v)) return v;
    if ((v.type === "text" && typeof v.text === "string") || (v.type === "image" && typeof v.data === "string")) {
      return fn(v as TextContent | ImageContent);
    }
    let out: Record<string, unknown> | undefined;
    for (const [key, item] of Object.entries(v)) {
      const next = visit(item);
      if (next !== item) {
        out ??= { ...v };
        out[key] = next;
      }
    }
    return out ?? v;
  };
  return visit(value) as T;
}

/**
 * Pure: calls `fn` with every text and image block in `value`, in `mapContentBlocks`'s visiting
 * order, copying nothing (a read-only walk: a context of many messages costs no allocation).
 */
export function forEachContentBlock(value: unknown, fn: (block: TextContent | ImageContent) => void): void {
  if (typeof value !== "object" || value === null) return;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) forEachContentBlock(value[i], fn);
    return;
  }
  const v = value as Record<string, unknown>;
  if ((v.type === "text" && typeof v.text === "string") || (v.type === "image" && typeof v.data === "string")) {
    fn(v as unknown as TextContent | ImageContent);
    return;
  }
  for (const key in v) if (Object.hasOwn(v, key)) forEachContentBlock(v[key], fn);
}

/** Every reference in `value`'s blocks, in visiting order. */
export function blobRefsIn(value: unknown): BlobRef[] {
  const refs: BlobRef[] = [];
  forEachContentBlock(value, (block) => {
    if (isBlobBlock(block)) refs.push(block.blob);
  });
  return refs;
}

/** Whether any block in `value` is by reference (`isBlobBlock`). */
export function hasBlobBlocks(value: unknown): boolean {
  let found = false;
  forEachContentBlock(value, (block) => {
    if (!found && isBlobBlock(block)) found = true;
  });
  return found;
}

const utf8 = new TextEncoder();

/** UTF-8 bytes of a text block, base64 characters of an image. */
const inlineSize = (block: TextContent | ImageContent) =>
  block.type === "text" ? utf8.encode(block.text).byteLength : block.data.length;

/** A part a command carries by reference, to be written under its name before the command. */
export interface InputPart {
  name: string;
  /** The text's UTF-8 bytes, or the image's decoded bytes. */
  bytes: Uint8Array;
  mimeType: string;
}

/**
 * Pure: the command with every text and image block over INLINE_CONTENT_BYTES by reference to
 * `fleet_inputs` (`inputPartName`, numbered in visiting order), and the parts to write. A `{text}`
 * input over the limit becomes a `{message}` input; a user or custom message whose content is one
 * long string gets it as one text block. References carry `size` and `mimeType`; their `digest` is
 * the object store's, added once written (`withDigests`).
 */
export function planInputParts(command: FleetCommand): { command: FleetCommand; parts: InputPart[] } {
  const parts: InputPart[] = [];
  const blocks = splitStringContent(textInputAsMessage(command));
  const planned = mapContentBlocks(blocks, (block) => {
    if (isBlobBlock(block) || inlineSize(block) <= INLINE_CONTENT_BYTES) return block;
    const name = inputPartName(command.sessionId, command.id, parts.length);
    const bytes = block.type === "text" ? utf8.encode(block.text) : base64ToBytes(block.data);
    const mimeType = block.type === "text" ? "text/plain; charset=utf-8" : block.mimeType;
    parts.push({ name, bytes, mimeType });
    return byReference(block, { bucket: INPUTS, name, size: bytes.byteLength, mimeType });
  });
  return { command: planned, parts };
}

/** The block with its content replaced by a reference: a text keeps a preview, an image no data. */
export function byReference(block: TextContent | ImageContent, ref: BlobRef): BlobBlock {
  if (block.type === "image") return { ...block, data: "", blob: ref };
  const preview = block.text.length > TEXT_PREVIEW_CHARS ? `${block.text.slice(0, TEXT_PREVIEW_CHARS)}…` : block.text;
  return { ...block, text: preview, blob: ref };
}

/** The block with its content back: the object's bytes as text (UTF-8), or as an image's base64. */
export function resolvedBlock(block: BlobBlock, bytes: Uint8Array): TextContent | ImageContent {
  const { blob: _ref, ...rest } = block;
  if (rest.type === "image") return { ...rest, data: bytesToBase64(bytes) };
  return { ...rest, text: new TextDecoder().decode(bytes) } as TextContent;
}

/** Pure: the references a command holds to `fleet_inputs`, moved to `fleet_blobs` (same names). */
export function inputsMovedToBlobs<T>(value: T): T {
  return mapContentBlocks(value, (block) =>
    isBlobBlock(block) && block.blob.bucket === INPUTS ? { ...block, blob: { ...block.blob, bucket: BLOBS } } : block,
  );
}

/** Pure: `value` with the digests of written parts (by name) added to their references. */
export function withDigests<T>(value: T, digests: ReadonlyMap<string, string>): T {
  return mapContentBlocks(value, (block) => {
    if (!isBlobBlock(block)) return block;
    const digest = digests.get(block.blob.name);
    return digest ? { ...block, blob: { ...block.blob, digest } } : block;
  });
}

const MESSAGE_INPUT_TYPES: ReadonlySet<string> = new Set(["prompt", "steer", "follow_up", "next_turn"]);

/** A `{text}` message input over the limit as the `{message}` input the loop would have made of it. */
function textInputAsMessage(command: FleetCommand): FleetCommand {
  if (!MESSAGE_INPUT_TYPES.has(command.type)) return command;
  const input = command as FleetCommand & { text?: string; images?: ImageContent[] };
  if (input.text === undefined || utf8.encode(input.text).byteLength <= INLINE_CONTENT_BYTES) return command;
  const { text, images, ...rest } = input;
  const content = [{ type: "text" as const, text }, ...(images ?? [])];
  return { ...rest, message: { role: "user", content, timestamp: command.ts ?? 0 } } as FleetCommand;
}

/** User and custom messages whose content is one string over the limit get it as one text block. */
function splitStringContent<T>(value: T): T {
  const visit = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(visit);
    if (!isRecord(v)) return v;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(v)) out[key] = visit(item);
    const longString = typeof v.content === "string" && utf8.encode(v.content).byteLength > INLINE_CONTENT_BYTES;
    if (longString && (v.role === "user" || v.role === "custom" || v.type === "custom_message")) {
      out.content = [{ type: "text", text: v.content }];
    }
    return out;
  };
  return visit(value) as T;
}

/** Base64 (standard alphabet) to bytes, in any JavaScript runtime. */
export function base64ToBytes(base64: string): Uint8Array {
  const binary = atob(base64);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** Bytes to base64 (standard alphabet), in any JavaScript runtime. */
export function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
