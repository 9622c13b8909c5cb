// The event sink (ordering, entries, leaf) and what happens when the emit port fails.
import { describe, expect, it } from "vitest";
import { EventSink } from "./event-sink.js";
import { RESOLVED } from "./run-scope.js";
import { deferred, echoTool, flush, sequentialIds, testEngine, trace } from "./testing/harness.js";
import type { EngineEvent } from "./types.js";

describe("event sink", () => {
  it("delivers in call order, one at a time, even when the port is slow", async () => {
    const delivered: string[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const gate = deferred();
    const sink = new EventSink({
      newId: sequentialIds(),
      leafId: null,
      emit: async (e: EngineEvent) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        if (e.id === "e1") await gate.promise;
        delivered.push(e.id);
        inFlight--;
      },
    });
    const all = Promise.all([
      sink.emit({ type: "agent_start" }),
      sink.emit({ type: "turn_start" }),
      sink.emit({ type: "turn_start" }),
    ]);
    await flush();
    expect(delivered).toEqual([]);
    gate.resolve();
    await all;
    expect(delivered).toEqual(["e1", "e2", "e3"]);
    expect(maxInFlight).toBe(1);
  });

  it.each(["emitDecided", "emitDecidedNow"] as const)(
    "decided drafts (%s behind a queue): decided once every event before them was accepted, delivered together, in order",
    async (method) => {
      const delivered: string[] = [];
      const gate = deferred();
      const sink = new EventSink({
        newId: sequentialIds(),
        leafId: null,
        emit: async (e: EngineEvent) => {
          if (e.id === "e1") await gate.promise;
          delivered.push(e.id);
        },
      });
      let decidedAfter: string[] | undefined;
      const first = sink.emit({ type: "agent_start" });
      const decide = () => {
        decidedAfter = delivered.slice();
        return [
          { id: "d1", body: { type: "turn_start" } },
          { id: "d2", body: { type: "turn_start" } },
        ] as const;
      };
      const decided = method === "emitDecided" ? sink.emitDecided(decide) : sink.emitDecidedNow(decide, undefined);
      const later = sink.emit({ type: "turn_start" });
      await flush();
      expect(decidedAfter).toBeUndefined();
      gate.resolve();
      await Promise.all([first, decided, later]);
      expect(decidedAfter).toEqual(["e1"]);
      expect(delivered).toEqual(["e1", "d1", "d2", "e2"]);
    },
  );

  it("emitDecided resolves with the drafts it delivered", async () => {
    const sink = new EventSink({ newId: sequentialIds(), leafId: null, emit: () => undefined });
    const decided = await sink.emitDecided(() => [{ id: "d1", body: { type: "turn_start" } }]);
    expect(decided.map((d) => d.id)).toEqual(["d1"]);
  });

  it("decided now: with nothing queued, decided and delivered at once, no promise (a delta's path)", async () => {
    const delivered: string[] = [];
    const sink = new EventSink({ newId: sequentialIds(), leafId: null, emit: (e) => void delivered.push(e.id) });
    let decided = false;
    const accepted = sink.emitDecidedNow((contentIndex: number) => {
      decided = true;
      return [{ id: "d1", body: { type: "message_update", deltas: [{ type: "text_start", contentIndex }] } }];
    }, 0);
    expect(decided).toBe(true);
    expect(delivered).toEqual(["d1"]);
    expect(accepted).toBe(RESOLVED);
  });

  it("decided now, a draft the port takes asynchronously: the rest follow it, before anything emitted after", async () => {
    const delivered: string[] = [];
    const gate = deferred();
    const sink = new EventSink({
      newId: sequentialIds(),
      leafId: null,
      emit: (e: EngineEvent) => {
        if (e.id !== "d1") return void delivered.push(e.id);
        return gate.promise.then(() => void delivered.push(e.id));
      },
    });
    const decided = sink.emitDecidedNow(
      () => [
        { id: "d1", body: { type: "turn_start" } },
        { id: "d2", body: { type: "turn_start" } },
      ],
      undefined,
    );
    const later = sink.emit({ type: "turn_start" });
    await flush();
    expect(delivered).toEqual([]);
    gate.resolve();
    await Promise.all([decided, later]);
    expect(delivered).toEqual(["d1", "d2", "e1"]);
  });

  it("an emit made from inside a synchronous port call is queued, never nested", async () => {
    const log: string[] = [];
    let depth = 0;
    const sink: EventSink = new EventSink({
      newId: sequentialIds(),
      leafId: null,
      emit: (e) => {
        depth++;
        log.push(`${e.id}@${depth}`);
        if (e.id === "e1") void sink.emit({ type: "queue_update", steer: [], followUp: [], nextTurn: [] });
        depth--;
      },
    });
    await sink.emit({ type: "agent_start" });
    await sink.emit({ type: "turn_start" });
    expect(log).toEqual(["e1@1", "e2@1", "e3@1"]);
  });

  it("fills entry for entry events only and moves its own leaf (stateless loop)", async () => {
    const events: EngineEvent[] = [];
    const sink = new EventSink({ newId: sequentialIds("x"), leafId: "root", emit: (e) => void events.push(e) });
    sink.runId = "r";
    await sink.emit({ type: "session_info", name: "a" });
    await sink.emit({ type: "turn_start" });
    await sink.emit({ type: "custom", customType: "c", data: null });
    expect(events).toEqual([
      { id: "x1", runId: "r", body: { type: "session_info", name: "a", entry: { id: "x1", parentId: "root" } } },
      { id: "x2", runId: "r", body: { type: "turn_start" } },
      {
        id: "x3",
        runId: "r",
        body: { type: "custom", customType: "c", data: null, entry: { id: "x3", parentId: "x1" } },
      },
    ]);
    expect(sink.leafId).toBe("x3");
  });

  it("reads the leaf from the session's fold when an entry event is delivered, and takes a given id", async () => {
    let leaf: string | null = "root";
    const events: EngineEvent[] = [];
    let release: () => void = () => {};
    const sink = new EventSink({
      newId: sequentialIds("x"),
      leafId: () => leaf,
      emit: async (e) => {
        events.push(e);
        if (e.id === "x1") await new Promise<void>((resolve) => (release = resolve));
        if ("entry" in e.body) leaf = e.id; // the shell folds the appended event
      },
    });
    const first = sink.emit({ type: "session_info", name: "a" });
    const second = sink.emit({ type: "label", targetId: "x1", label: "l" }, "given");
    leaf = "moved-by-the-fold"; // ignored: the first event's delivery is still in flight
    release();
    await Promise.all([first, second]);
    expect(events.map((e) => [e.id, "entry" in e.body ? e.body.entry : null])).toEqual([
      ["x1", { id: "x1", parentId: "root" }],
      ["given", { id: "given", parentId: "x1" }],
    ]);
  });

  it("after the port throws, every later emit rejects with the same error and nothing more is sent", async () => {
    const sent: string[] = [];
    const failures: Error[] = [];
    const sink = new EventSink({
      newId: sequentialIds(),
      leafId: null,
      onFailure: (e) => failures.push(e),
      emit: (e) => {
        if (e.id === "e2") throw new Error("wrong last sequence");
        sent.push(e.id);
      },
    });
    await sink.emit({ type: "agent_start" });
    await expect(sink.emit({ type: "turn_start" })).rejects.toThrow("wrong last sequence");
    await expect(sink.emit({ type: "turn_start" })).rejects.toThrow("wrong last sequence");
    expect(sent).toEqual(["e1"]);
    expect(failures).toHaveLength(1);
    expect(sink.failure?.message).toBe("wrong last sequence");
  });
});

describe("emit port failure during a run", () => {
  it("stops the run at once: nothing more is emitted, the run's signal aborts, the result says emit_failed", async () => {
    const signals: (AbortSignal | undefined)[] = [];
    let count = 0;
    const { engine, rec } = testEngine({
      tools: [echoTool],
      steps: [{ content: [{ type: "toolCall", id: "t1", name: "echo", arguments: { text: "x" } }] }],
      handlers: {
        echo: (_a, signal, onUpdate) => {
          signals.push(signal);
          onUpdate("progress");
          return new Promise((_resolve, reject) =>
            signal?.addEventListener("abort", () => reject(new Error("aborted"))),
          );
        },
      },
      wrapEmit: (emit) => (e) => {
        if (e.body.type === "tool_execution_update") throw new Error("lease lost");
        count++;
        return emit(e);
      },
    });
    const result = await engine.prompt("go");
    expect(result).toEqual({ status: "emit_failed", runId: "e1", error: new Error("lease lost") });
    expect(trace(rec.events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user(go)",
      "message_end:user(go)",
      "message_start:assistant(…)",
      "message_end:assistant(toolUse)",
      "tool_execution_start:t1",
    ]);
    expect(count).toBe(rec.events.length);
    expect(signals[0]?.aborted).toBe(true);
    expect(engine.state.isStreaming).toBe(false);
    await expect(engine.steer({ role: "user", content: "x", timestamp: 1 })).rejects.toThrow("lease lost");
  });
});

describe("an asynchronous emit port", () => {
  it("gives the same events, in the same order, as a synchronous one (parallel tools, updates, queues)", async () => {
    const scenario = (wrapEmit?: (emit: import("./types.js").Emit) => import("./types.js").Emit) => {
      const t = testEngine({
        tools: [echoTool],
        steps: [
          {
            content: [1, 2, 3].map((n) => ({
              type: "toolCall" as const,
              id: `t${n}`,
              name: "echo",
              arguments: { text: `${n}` },
            })),
          },
          { text: "done" },
        ],
        handlers: {
          echo: async (args, _s, onUpdate, id) => {
            onUpdate(`${id}-a`);
            await t.engine.steer({ role: "user", content: `steer-${id}`, timestamp: 1 });
            onUpdate(`${id}-b`);
            return { content: [{ type: "text", text: String((args as { text: string }).text) }] };
          },
        },
        ...(wrapEmit ? { wrapEmit } : {}),
      });
      return t;
    };
    const sync = scenario();
    await sync.engine.prompt("go");
    const slow = scenario((emit) => async (e) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      await emit(e);
    });
    await slow.engine.prompt("go");
    expect(slow.rec.events.map((e) => e.body.type)).toEqual(sync.rec.events.map((e) => e.body.type));
    // delivered in minting order: ids (e1, e2, …) strictly increase
    const minted = slow.rec.events.map((e) => Number(e.id.slice(1)));
    expect(minted).toEqual([...minted].sort((a, b) => a - b));
    expect(new Set(minted).size).toBe(minted.length);
    expect(trace(slow.rec.events)).toEqual(trace(sync.rec.events));
    expect(slow.engine.state.leafId).toBe(sync.engine.state.leafId);
  });
});
