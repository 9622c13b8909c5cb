import { encodeToolCallRequest, type ToolCallRequest } from "@fleet/protocol";
import type { JsMsg } from "@nats-io/jetstream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { AnyToolDefinition } from "../define-tool.js";
import type { ClaimDecision } from "./claim-decision.js";
import { createDeliveryHandler } from "./handle-delivery.js";
import { createInflightCalls, type InflightCall } from "./inflight-calls.js";
import type { DeliveryOutcome } from "./runner-metrics.js";

const BASH = { name: "bash" } as AnyToolDefinition;

/** A delivery of a call's message that records what the handler did with it. */
function delivery(seq: number, body: unknown = request()) {
  const acts: string[] = [];
  const encoded = typeof body === "string" ? null : encodeToolCallRequest(body as ToolCallRequest);
  if (encoded && !encoded.ok) throw new Error(encoded.error);
  const data = encoded ? encoded.bytes : new TextEncoder().encode(body as string);
  const msg = {
    seq,
    data,
    info: { deliveryCount: 1, timestampNanos: 0 },
    ackAck: async () => {
      acts.push("ack");
      return true;
    },
    nak: (delay?: number) => acts.push(delay === undefined ? "nak" : `nak ${delay}`),
    working: () => acts.push("working"),
  } as unknown as JsMsg;
  return { msg, acts };
}

function request(over: Record<string, unknown> = {}) {
  return { sessionId: "s-1", runId: "r-1", toolCallId: "t-1", toolName: "bash", args: {}, deadline: 0, ...over };
}

/**
 * Given the claim decision and a run that ends when `release` is called; records the published
 * invalid answers, the metrics and the calls run.
 */
function given(decision: ClaimDecision = { kind: "claim", expectLastSeq: 0 }, cancelled: string[] = []) {
  const inflight = createInflightCalls();
  const published: string[] = [];
  const outcomes: DeliveryOutcome[] = [];
  const runs: InflightCall[] = [];
  let release: (outcome: DeliveryOutcome) => void = () => {};
  const handle = createDeliveryHandler({
    inflight,
    publisher: {
      failed: async (call, text, seq) => {
        published.push(`${call.sessionId}/${call.toolCallId}@${seq}: ${text}`);
      },
    },
    cancelledEarly: (key) => cancelled.includes(key),
    claim: async () => decision,
    run: (entry) => {
      runs.push(entry);
      return new Promise((resolve) => {
        release = resolve;
      });
    },
    workingIntervalMs: 60_000,
    busyRetryMs: 1_000,
    metrics: { delivery: (_tool, outcome) => outcomes.push(outcome), duration() {}, active() {} },
    logger: pino({ level: "silent" }),
  });
  return { handle, inflight, published, outcomes, runs, release: (o: DeliveryOutcome) => release(o) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("handleDelivery", () => {
  it("given an unreadable request, then nothing can be answered; it is acked as a bad request", async () => {
    const g = given();
    const d = delivery(1, "{not json");
    await g.handle(d.msg, BASH);
    expect(d.acts).toEqual(["ack"]);
    expect(g.published).toEqual([]);
    expect(g.outcomes).toEqual(["bad_request"]);
  });

  it("given a request on another tool's subject, then it is answered only if nothing was written (seq 0), and acked", async () => {
    const g = given();
    const d = delivery(1, request({ toolName: "ls" }));
    await g.handle(d.msg, BASH);
    expect(g.published).toEqual([
      's-1/t-1@0: Invalid tool call request: toolName "ls" was published on the subject of tool "bash"',
    ]);
    expect(d.acts).toEqual(["ack"]);
    expect(g.runs).toEqual([]);
  });

  it("given a claimed call, when ack_wait passes and the same message is redelivered, then the run keeps it and marks it in progress", async () => {
    const g = given();
    const first = delivery(5);
    const running = g.handle(first.msg, BASH);
    await tick();
    const again = delivery(5);
    await g.handle(again.msg, BASH);
    expect(again.acts).toEqual(["working"]);
    expect(g.runs[0]?.msg).toBe(again.msg);
    expect(g.runs).toHaveLength(1);
    g.release("ok");
    await running;
    expect(g.outcomes).toEqual(["ok"]);
    expect(g.inflight.size()).toBe(0);
  });

  it("given a claimed call, when another message of the same call arrives, then it is acked as a duplicate once the run ended", async () => {
    const g = given();
    const running = g.handle(delivery(5).msg, BASH);
    await tick();
    const copy = delivery(9);
    const second = g.handle(copy.msg, BASH);
    await tick();
    expect(copy.acts).toEqual([]);
    g.release("ok");
    await Promise.all([running, second]);
    expect(copy.acts).toEqual(["ack"]);
    expect(g.outcomes).toEqual(["ok", "duplicate"]);
    expect(g.runs).toHaveLength(1);
  });

  it("given a call cancelled before it arrived, then its run starts aborted with cause cancel", async () => {
    const g = given(undefined, ["s-1.t-1"]);
    const running = g.handle(delivery(5).msg, BASH);
    await tick();
    expect(g.runs[0]?.controller.signal.reason).toBe("cancel");
    g.release("aborted");
    await running;
  });

  it("given a busy call, then it is nak'ed with the decided delay and not run", async () => {
    const g = given({ kind: "busy", owner: "other", delayMs: 250 });
    const d = delivery(5);
    await g.handle(d.msg, BASH);
    expect(d.acts).toEqual(["nak 250"]);
    expect(g.outcomes).toEqual(["busy"]);
    expect(g.runs).toEqual([]);
  });

  it("given a result or a lost retry:never run, then it is acked and not run", async () => {
    for (const [decision, outcome] of [
      [{ kind: "duplicate" }, "duplicate"],
      [{ kind: "fail", text: "lost", expectLastSeq: 3, previousRunner: "other" }, "runner_lost"],
    ] as const) {
      const g = given(decision);
      const d = delivery(5);
      await g.handle(d.msg, BASH);
      expect(d.acts).toEqual(["ack"]);
      expect(g.outcomes).toEqual([outcome]);
      expect(g.runs).toEqual([]);
    }
  });

  it("given the claim fails (NATS), then the delivery is handed back after busyRetryMs and the call forgotten", async () => {
    const inflight = createInflightCalls();
    const g = createDeliveryHandler({
      inflight,
      publisher: { failed: async () => {} },
      cancelledEarly: () => false,
      claim: () => Promise.reject(new Error("timeout")),
      run: () => Promise.resolve("ok"),
      workingIntervalMs: 60_000,
      busyRetryMs: 1_000,
      metrics: { delivery() {}, duration() {}, active() {} },
      logger: pino({ level: "silent" }),
    });
    const d = delivery(5);
    await g(d.msg, BASH);
    expect(d.acts).toEqual(["nak 1000"]);
    expect(inflight.size()).toBe(0);
  });
});
