import { createScriptedProvider } from "@fleet/loop";
import { foldAgentEvents } from "@fleet/protocol";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { notation } from "../support/loop-harness.js";
import { useScriptedWorker } from "../support/worker-world.js";

/** The worker's log lines (pino JSON): a run input the fold did not decide is logged `<kind>_undecided`. */
const logged: { evt?: string }[] = [];
const w = useScriptedWorker({
  logger: pino({ level: "info" }, { write: (line: string) => void logged.push(JSON.parse(line)) }),
});

const script = (...steps: Parameters<typeof createScriptedProvider>[0]["steps"]) =>
  w.scripted.use(createScriptedProvider({ steps, now: () => 1_000, chunkChars: 4 }).streamFn);

const isEnded = (events: { type: string }[]) => events.some((e) => e.type === "agent_end");

describe("loop service / a prompt", () => {
  it("appends pi's full event order on fleet.evt.<p>.<sid>, and the log folds to pi's state", async () => {
    script({ text: "Hello from Fleet" });
    const id = await w.cmd.send("flow-1", { type: "prompt", text: "hi" });
    const events = await w.cmd.waitFor("flow-1", isEnded);
    expect(notation(events)).toEqual([
      "owner_change",
      "command_accepted",
      "session_created",
      "agent_start",
      "turn_start",
      "ms:user",
      "me:user",
      "ms:assistant",
      "me:assistant(stop)",
      "turn_end",
      "agent_end",
    ]);
    expect(events.find((e) => e.type === "command_accepted")).toMatchObject({ commandId: id, commandType: "prompt" });
    expect(events.filter((e) => e.type === "message_update").length).toBeGreaterThan(0);
    const state = foldAgentEvents(events);
    expect(state.isStreaming).toBe(false);
    expect(state.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const last = state.messages[1];
    expect(last?.role === "assistant" && last.content).toEqual([{ type: "text", text: "Hello from Fleet" }]);
    // Every event of the run carries the run id; the entry of message_end is its own event id.
    const runIds = new Set(events.filter((e) => e.meta.runId).map((e) => e.meta.runId));
    expect(runIds.size).toBe(1);
    for (const e of events) if (e.type === "message_end") expect(e.entry.id).toBe(e.meta.id);
  });

  it("every input of a live run is decided on the fold: no chunk, turn end or boundary falls back to the engine", async () => {
    script({ text: "A longer answer, streamed four characters at a time." }, { text: "And a second run." });
    await w.cmd.send("flow-core", { type: "prompt", text: "hi" });
    await w.cmd.waitFor("flow-core", isEnded);
    await w.cmd.send("flow-core", { type: "prompt", text: "again" });
    const events = await w.cmd.waitFor("flow-core", (es) => es.filter((e) => e.type === "agent_end").length === 2);
    const deltas = events.flatMap((e) => (e.type === "message_update" ? e.deltas : []));
    expect(deltas.filter((d) => d.type === "text_delta").length).toBeGreaterThan(15);
    expect(logged.filter((l) => l.evt?.endsWith("_undecided"))).toEqual([]);
  });

  it("a redelivered (re-sent) command id produces nothing new", async () => {
    script({ text: "once" });
    const id = await w.cmd.send("flow-2", { type: "prompt", text: "hi" });
    await w.cmd.waitFor("flow-2", isEnded);
    const before = (await w.cmd.events("flow-2")).length;
    // Same id again, under another msgID window key: the stream dedups the first, the loop the rest.
    await w.cmd.sendRaw(
      "flow-2",
      JSON.stringify({ type: "prompt", id, sessionId: "flow-2", text: "hi" }),
      `${id}-again`,
    );
    await new Promise((r) => setTimeout(r, 400));
    expect((await w.cmd.events("flow-2")).length).toBe(before);
  });

  it("a second prompt while a run is active is rejected busy; a steer is queued at once", async () => {
    w.scripted.use(
      createScriptedProvider({
        steps: [{ text: "a long answer that streams slowly", tokensPerSecond: 40 }, { text: "steered answer" }],
        now: () => 1_000,
        chunkChars: 4,
        sleep: (ms, signal) =>
          new Promise((resolve) => {
            const t = setTimeout(resolve, ms);
            signal?.addEventListener("abort", () => {
              clearTimeout(t);
              resolve();
            });
          }),
      }).streamFn,
    );
    await w.cmd.send("flow-3", { type: "prompt", text: "first" });
    await w.cmd.waitFor("flow-3", (ev) => ev.some((e) => e.type === "message_start" && e.message.role === "assistant"));
    const busyId = await w.cmd.send("flow-3", { type: "prompt", text: "second" });
    await w.cmd.send("flow-3", { type: "steer", text: "and also this" });
    const events = await w.cmd.waitFor("flow-3", isEnded);
    expect(events.find((e) => e.type === "command_rejected")).toMatchObject({ commandId: busyId, code: "busy" });
    const q = events.find((e) => e.type === "queue_update");
    expect(q && q.type === "queue_update" && q.steer.length).toBe(1);
    expect(notation(events.slice(events.findIndex((e) => e.type === "agent_start")))).toEqual([
      "agent_start",
      "turn_start",
      "ms:user",
      "me:user",
      "ms:assistant",
      "command_rejected",
      "command_accepted",
      "queue_update",
      "me:assistant(stop)",
      "turn_end",
      "turn_start",
      "queue_update",
      "ms:user",
      "me:user",
      "ms:assistant",
      "me:assistant(stop)",
      "turn_end",
      "agent_end",
    ]);
  });
});
