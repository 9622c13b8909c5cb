import { gunzipSync } from "node:zlib";
import { buildContext, foldSessionEvents, parsedEntryCount, SESSION_FOLD_FORMAT } from "@fleet/protocol";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  emitMessage,
  streamAssistant,
  textOf,
  userMessage,
} from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import {
  decodeSnapshotBody,
  type EncodedSnapshot,
  encodeSnapshot,
  readSnapshotHead,
  type SessionSnapshot,
  SNAPSHOT_ENVELOPE_VERSION,
} from "./snapshot-envelope.js";

const log = createLogBuilder(7);
log.add({ type: "session_created", config: CONFIG });
for (let turn = 0; turn < 20; turn++) {
  log.add({ type: "agent_start" });
  log.add({ type: "turn_start" });
  emitMessage(log, userMessage(`question ${turn} ${"x".repeat(100)}`));
  streamAssistant(log, assistantMessage([textOf(`answer ${turn} ${"y".repeat(200)}`)]));
}
const events = log.events;
const snapshot: SessionSnapshot = {
  sessionId: "s-1",
  seq: 412,
  msgId: "evt-412",
  state: foldSessionEvents(events),
  marks: { restore: { commandId: "c-r", by: "ann", requestedAt: 5, appended: 3, restored: true, after: 2 } },
};

/** Reads back what `encodeSnapshot` stored, part by part. */
function readBack(encoded: EncodedSnapshot, sessionId = "s-1") {
  const head = readSnapshotHead(encoded.parts[0] as Uint8Array, sessionId);
  if (!head.ok) return head;
  return decodeSnapshotBody(head.header, [head.first, ...encoded.parts.slice(1)]);
}

describe("snapshot envelope", () => {
  it("round-trips a fold cut into parts that each stay within the part size", async () => {
    const encoded = await encodeSnapshot(snapshot, 500);
    expect(encoded.header).toMatchObject({
      format: "fleet-snapshot",
      v: SNAPSHOT_ENVELOPE_VERSION,
      fold: SESSION_FOLD_FORMAT,
      seq: 412,
    });
    expect(encoded.parts.length).toBe(Math.ceil(encoded.header.bytes / 500));
    expect(encoded.parts.length).toBeGreaterThan(2);
    for (const part of encoded.parts.slice(1)) expect(part.byteLength).toBeLessThanOrEqual(500);
    const read = readBack(encoded);
    expect(read.ok && read.snapshot).toStrictEqual(snapshot);
    // One part when it fits.
    const whole = await encodeSnapshot(snapshot, 10_000_000);
    expect(whole.parts.length).toBe(1);
    expect(readBack(whole).ok).toBe(true);
  });

  it("keeps the tree's entries as stored lines: a read parses none, and the fold it gives folds on to the log's", async () => {
    const cut = 300;
    const atCut: SessionSnapshot = { ...snapshot, state: foldSessionEvents(events.slice(0, cut)) };
    const read = readBack(await encodeSnapshot(atCut, 500));
    if (!read.ok) throw new Error(read.error);
    const entries = read.snapshot.state.tree.entries;
    expect(entries.length).toBe(atCut.state.tree.entries.length);
    expect(parsedEntryCount(entries)).toBe(0);
    // The context reads the branch only; here (one branch) every entry, each equal to the fold's.
    expect(buildContext(read.snapshot.state.tree)).toStrictEqual(buildContext(atCut.state.tree));
    expect(parsedEntryCount(entries)).toBe(entries.length);
    // Folded on, and snapshotted again (its stored lines copied): the whole log's fold, byte for byte.
    const again = readBack(await encodeSnapshot(atCut, 500));
    if (!again.ok) throw new Error(again.error);
    const resumed = foldSessionEvents(events.slice(cut), again.snapshot.state);
    expect(parsedEntryCount(resumed.tree.entries)).toBe(0);
    expect(resumed).toStrictEqual(snapshot.state);
    const plain = (e: EncodedSnapshot) =>
      gunzipSync(Buffer.concat(e.parts.map((p, i) => (i === 0 ? p.subarray(p.indexOf(0x0a) + 1) : p)))).toString();
    expect(plain(await encodeSnapshot({ ...snapshot, state: resumed }, 500))).toBe(
      plain(await encodeSnapshot(snapshot, 500)),
    );
  });

  it("names in its header where the open run's trace begins, and refuses a header that disagrees with the marks", async () => {
    const open: SessionSnapshot = {
      ...snapshot,
      marks: { trace: { cursor: {} as never, acceptedSeq: 400, runFrom: 400 } },
    };
    const encoded = await encodeSnapshot(open, 500);
    expect(encoded.header.traceFrom).toBe(400);
    expect(readBack(encoded)).toMatchObject({ ok: true });
    expect((await encodeSnapshot(snapshot, 500)).header.traceFrom).toBeUndefined();
    const text = new TextDecoder().decode(encoded.parts[0]);
    const newline = text.indexOf("\n");
    const head = new TextEncoder().encode(text.slice(0, newline).replace('"traceFrom":400', '"traceFrom":1'));
    const first = encoded.parts[0] as Uint8Array;
    const body = first.subarray(first.indexOf(0x0a));
    const edited = new Uint8Array(head.byteLength + body.byteLength);
    edited.set(head, 0);
    edited.set(body, head.byteLength);
    expect(readBack({ ...encoded, parts: [edited, ...encoded.parts.slice(1)] })).toMatchObject({
      ok: false,
      reason: "corrupt",
    });
  });

  it("refuses a changed byte, a missing part, another session's snapshot and another format", async () => {
    const encoded = await encodeSnapshot(snapshot, 500);
    const flipped = encoded.parts.map((p) => p.slice());
    const middle = flipped[1] as Uint8Array;
    middle[10] = (middle[10] as number) ^ 0x20;
    expect(readBack({ ...encoded, parts: flipped })).toMatchObject({ ok: false, reason: "corrupt" });
    expect(readBack({ ...encoded, parts: encoded.parts.slice(0, -1) })).toMatchObject({ ok: false, reason: "corrupt" });
    expect(readBack(encoded, "s-2")).toMatchObject({ ok: false, reason: "other_session" });
    expect(readSnapshotHead(new TextEncoder().encode("garbage"), "s-1")).toMatchObject({
      ok: false,
      reason: "unreadable",
    });

    const text = new TextDecoder().decode(encoded.parts[0]);
    const stale = text.replace(`"fold":${SESSION_FOLD_FORMAT}`, `"fold":${SESSION_FOLD_FORMAT + 1}`);
    expect(stale).not.toBe(text);
    expect(readSnapshotHead(new TextEncoder().encode(stale), "s-1")).toMatchObject({
      ok: false,
      reason: "stale_version",
    });
  });
});
