// given events → then open-work index operations: the pure deciders of change 41, run as a single
// writer carries them out (each event appended on its own, the index op decided before and after).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { decodeEvent, type FleetEvent, foldSessionEvents, initialSessionState } from "@fleet/protocol";
import { CONFIG, createLogBuilder, type EventInput, toolCall, userMessage } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { HELLO, HI, ONE_RUN } from "../testing/decider-spec.js";
import { beforeAppend, type IndexStatus, openWorkOf, statusAfter, whenSettled } from "./open-work.js";

/**
 * Appends `events` one by one from `status` (the events of one decision, `held`, settle only after
 * the last of them, as the actor's `hold` does): the trace of index ops and event types, and the
 * invariant checked at every cut (open work ⇒ listed).
 */
function trace(
  events: readonly FleetEvent[],
  from: IndexStatus = "unlisted",
  restoring = () => false,
  held: ReadonlySet<number> = new Set(),
): string[] {
  const state = initialSessionState();
  let status = from;
  const out: string[] = [];
  events.forEach((event, i) => {
    const before = beforeAppend(status, event);
    if (before) {
      out.push(before);
      status = statusAfter(before);
    }
    foldSessionEvents([event], state);
    out.push(event.type);
    const open = openWorkOf(state, restoring());
    if (open.length > 0) expect(status, `open ${open.join(",")} after ${event.type} but not listed`).toBe("listed");
    const after = held.has(i) ? null : whenSettled(status, open);
    if (after) {
      out.push(after);
      status = statusAfter(after);
    }
  });
  return out;
}

function log(...inputs: EventInput[]): FleetEvent[] {
  const b = createLogBuilder(41, "ow-session");
  for (const input of inputs) b.add(input);
  return b.events;
}

const created: EventInput = { type: "session_created", config: CONFIG };

describe("open-work index deciders", () => {
  it("given a prompt's run → the entry is written before its acceptance and removed after agent_end", () => {
    expect(trace(log(created, ...ONE_RUN))).toEqual([
      "mark",
      "session_created",
      "unmark",
      "mark",
      "command_accepted",
      "agent_start",
      "turn_start",
      "message_start",
      "message_end",
      "message_start",
      "message_end",
      "turn_end",
      "agent_end",
      "unmark",
    ]);
  });

  it("given an ownership change or a rejection on an idle session → no index op", () => {
    const events = log(
      created,
      { type: "owner_change", workerId: "w2", partition: 0, epoch: 7 },
      { type: "command_rejected", commandId: "c9", commandType: "prompt", code: "busy", reason: "busy" },
    );
    expect(trace(events.slice(1), "unlisted")).toEqual(["owner_change", "command_rejected"]);
  });

  it("given a run waiting at an approval gate → open (run); a pending write during it → still open after agent_end until flushed", () => {
    const asked = { ...HI, content: [toolCall("call-1", "bash", {})], stopReason: "toolUse" as const };
    const events = log(
      created,
      { type: "command_accepted", commandId: "c1", commandType: "prompt" },
      { type: "agent_start" },
      { type: "turn_start" },
      { type: "message_start", message: HELLO },
      { type: "message_end", message: HELLO },
      { type: "message_start", message: asked },
      { type: "message_end", message: asked },
      { type: "tool_execution_start", toolCallId: "call-1", toolName: "bash", args: {} },
      { type: "tool_approval_requested", toolCallId: "call-1", toolName: "bash", args: {} },
    );
    const state = foldSessionEvents(events);
    expect(openWorkOf(state, false)).toEqual(["run"]);
    const pending = log(
      created,
      ...ONE_RUN.slice(0, 7),
      { type: "command_accepted", commandId: "w1", commandType: "set_name" },
      { type: "pending_write", commandId: "w1", write: { type: "session_info", name: "n" }, eventId: "e-name" },
      ...ONE_RUN.slice(7),
    );
    const ops = trace(pending);
    expect(ops.slice(-2)).toEqual(["turn_end", "agent_end"]);
    expect(openWorkOf(foldSessionEvents(pending), false)).toEqual(["pending_writes"]);
  });

  it("given an accepted prompt whose run never began → open (accepted_run)", () => {
    const events = log(created, {
      type: "command_accepted",
      commandId: "c1",
      commandType: "prompt",
      messages: [userMessage("cut before the run")],
    });
    expect(openWorkOf(foldSessionEvents(events), false)).toEqual(["accepted_run"]);
    expect(trace(events)).toEqual(["mark", "session_created", "unmark", "mark", "command_accepted"]);
  });

  it("given a standalone compaction → open until compaction_end", () => {
    const events = log(
      created,
      ...ONE_RUN,
      { type: "command_accepted", commandId: "k1", commandType: "compact" },
      { type: "compaction_start", reason: "manual" },
    );
    expect(openWorkOf(foldSessionEvents(events), false)).toEqual(["compaction"]);
    const ended = log(
      created,
      ...ONE_RUN,
      { type: "command_accepted", commandId: "k1", commandType: "compact" },
      { type: "compaction_start", reason: "manual" },
      { type: "compaction_end", reason: "manual", aborted: true, willRetry: false },
    );
    // Appended one by one, the acceptance alone leaves nothing open; held as one decision, it does not flap.
    expect(trace(ended).slice(-7)).toEqual([
      "mark",
      "command_accepted",
      "unmark",
      "mark",
      "compaction_start",
      "compaction_end",
      "unmark",
    ]);
    const acceptance = ended.findIndex((e) => e.type === "command_accepted" && e.commandId === "k1");
    expect(trace(ended, "unlisted", () => false, new Set([acceptance])).slice(-5)).toEqual([
      "mark",
      "command_accepted",
      "compaction_start",
      "compaction_end",
      "unmark",
    ]);
  });

  it("given a deletion accepted → open (lifecycle) for good: only the shell removes the entry, after the log is gone", () => {
    const events = log(created, ...ONE_RUN, {
      type: "command_accepted",
      commandId: "d1",
      commandType: "delete_session",
    });
    expect(openWorkOf(foldSessionEvents(events), false)).toEqual(["lifecycle"]);
    expect(trace(events).slice(-2)).toEqual(["mark", "command_accepted"]);
  });

  it("given a restore whose last steps are not done → open (lifecycle); once done → the entry goes", () => {
    const state = foldSessionEvents(log(created));
    expect(openWorkOf(state, true)).toEqual(["lifecycle"]);
    expect(whenSettled("listed", openWorkOf(state, true))).toBeNull();
    expect(whenSettled("listed", openWorkOf(state, false))).toBe("unmark");
  });

  it("given a loaded session (entry unknown) → an opening event writes it, a settled session with nothing open removes it", () => {
    expect(beforeAppend("unknown", log(created, ...ONE_RUN)[1] as FleetEvent)).toBe("mark");
    expect(whenSettled("unknown", [])).toBe("unmark");
    expect(whenSettled("unlisted", [])).toBeNull();
    expect(beforeAppend("listed", log(created)[0] as FleetEvent)).toBeNull();
  });

  it("every golden log: whenever a cut shows open work, the entry is listed (from no entry, and from a loaded one)", () => {
    const dir = join(import.meta.dirname, "../../../../libs/protocol/fixtures");
    const files = readdirSync(dir).filter((f) => f.endsWith(".jsonl"));
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const events = readFileSync(join(dir, file), "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => {
          const d = decodeEvent(new TextEncoder().encode(l));
          if (!d.ok) throw new Error(`${file}: ${d.error}`);
          return d.value;
        });
      const ops = trace(events, "unlisted");
      expect(ops[0], file).toBe("mark");
      trace(events, "unknown");
    }
  });
});
