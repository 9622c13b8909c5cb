// The session lifecycle's pure parts: the archive file, the tenant's ledger, lifecycle subjects.
import { describe, expect, it } from "vitest";
import { CONFIG, createLogBuilder, userMessage } from "../fixtures/builders.js";
import { type ArchiveHeader, encodeArchive, parseArchive } from "./archive-format.js";
import { applyToLedger, type LedgerRecord, settleLedger } from "./budget.js";
import { encodeEvent, type FleetEvent } from "./index.js";
import { LIFECYCLE_HALT_POINTS, LifecycleRecord } from "./lifecycle.js";
import { parseLifecycleSubject, subjects } from "./subjects.js";

const log = createLogBuilder(3);
log.add({ type: "session_created", config: CONFIG });
log.add({ type: "message_end", message: userMessage("hello") });
const events: FleetEvent[] = log.events;
const bytesOf = (e: FleetEvent) => {
  const encoded = encodeEvent(e);
  if (!encoded.ok) throw new Error(encoded.error);
  return encoded.bytes;
};
const header: ArchiveHeader = {
  format: "fleet-archive",
  v: 1,
  sessionId: "s-1",
  commandId: "c-arc",
  by: "ops",
  archivedAt: 5,
  events: 2,
  firstSeq: 10,
  lastSeq: 12,
  spend: [{ day: "2025-11-29", inputTokens: 3, outputTokens: 2, totalTokens: 5, costUsd: 0.5 }],
};

describe("archive file", () => {
  it("round-trips the header and the events, byte for byte as stored", () => {
    const text = encodeArchive(header, [
      { seq: 10, data: bytesOf(events[0] as FleetEvent) },
      { seq: 12, data: bytesOf(events[1] as FleetEvent) },
    ]);
    expect(text.split("\n")[1]).toBe(
      `{"seq":10,"event":${new TextDecoder().decode(bytesOf(events[0] as FleetEvent))}}`,
    );
    expect(parseArchive(text)).toEqual({ ok: true, value: { header, events } });
  });

  it("refuses a cut file, sequences out of order, another session's event and a bad header", () => {
    const line = (seq: number, e: FleetEvent) => ({ seq, data: bytesOf(e) });
    const [a, b] = events as [FleetEvent, FleetEvent];
    const cut = encodeArchive(header, [line(10, a)]);
    expect(parseArchive(cut)).toMatchObject({ ok: false, error: "archive holds 1 events; its header says 2" });
    expect(parseArchive(encodeArchive(header, [line(12, a), line(10, b)]))).toMatchObject({
      ok: false,
      error: "archive line 3: sequence 10 out of order",
    });
    const other = { ...b, meta: { ...b.meta, sessionId: "s-2" } };
    expect(parseArchive(encodeArchive(header, [line(10, a), line(12, other)]))).toMatchObject({
      ok: false,
      error: "archive line 3: an event of session s-2",
    });
    expect(parseArchive('{"format":"zip"}\n').ok).toBe(false);
    expect(parseArchive("").ok).toBe(false);
  });
});

describe("tenant ledger", () => {
  const spend = { inputTokens: 10, outputTokens: 4, totalTokens: 14, costUsd: 0.25 };

  it("an operation adds its amount once, however often it is applied, until it is settled", () => {
    const first = applyToLedger(undefined, "2025-11-29", "del-1", spend, 1) as LedgerRecord;
    expect(first).toEqual({ day: "2025-11-29", ...spend, pending: ["del-1"] });
    expect(applyToLedger(first, "2025-11-29", "del-1", spend, 1)).toBeNull();
    const second = applyToLedger(first, "2025-11-29", "del-2", spend, 1) as LedgerRecord;
    expect(second).toMatchObject({ totalTokens: 28, costUsd: 0.5, pending: ["del-1", "del-2"] });
    const settled = settleLedger(second, "del-1") as LedgerRecord;
    expect(settled.pending).toEqual(["del-2"]);
    expect(settleLedger(settled, "del-1")).toBeNull();
    expect(settleLedger(undefined, "del-1")).toBeNull();
  });

  it("a restore takes its amount away, never below zero", () => {
    const one = applyToLedger(undefined, "2025-11-29", "del-1", spend, 1) as LedgerRecord;
    const back = applyToLedger(one, "2025-11-29", "res-1", { ...spend, totalTokens: 20 }, -1) as LedgerRecord;
    expect(back).toMatchObject({ inputTokens: 0, totalTokens: 0, costUsd: 0, pending: ["del-1", "res-1"] });
  });
});

describe("lifecycle records and subjects", () => {
  it("records live on fleet.evt.lifecycle.<sessionId>, outside every partition's subjects", () => {
    expect(subjects.lifecycle("s-1")).toBe("fleet.evt.lifecycle.s-1");
    expect(parseLifecycleSubject("fleet.evt.lifecycle.s-1")).toBe("s-1");
    expect(parseLifecycleSubject("fleet.evt.3.s-1")).toBeNull();
    expect(parseLifecycleSubject("fleet.evt.lifecycle.s.1")).toBeNull();
  });

  it("an archived record names its archive; a deleted one does not need to", () => {
    const common = { v: 1, sessionId: "s-1", commandId: "c", by: "ops", requestedAt: 1, ts: 2, producer: "loop" };
    expect(LifecycleRecord.safeParse({ type: "session_deleted", ...common, events: 3, spend: [] }).success).toBe(true);
    expect(LifecycleRecord.safeParse({ type: "session_archived", ...common, events: 3, spend: [] }).success).toBe(
      false,
    );
  });

  it("every step of every operation is a halt point of the crash tests", () => {
    expect(LIFECYCLE_HALT_POINTS).toContain("archive:archived");
    expect(LIFECYCLE_HALT_POINTS).toContain("restore:events_partial");
    expect(LIFECYCLE_HALT_POINTS).toHaveLength(28);
  });
});
