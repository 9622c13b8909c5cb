// AG-UI end to end: `@ag-ui/client`'s HttpAgent runs a thread through POST /v1/agui on the real
// stack (nats-server, redis-server, session store, tool runner, loop worker on the fake Anthropic
// API): thinking, a tool call, an approval as an interrupt resumed with `resume[]`, connections cut
// mid-stream and resumed with Last-Event-ID, and the events folding to the session log's transcript.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type BaseEvent, HttpAgent, type HttpAgentFetchFn, type Message, verifyEvents } from "@ag-ui/client";
import { type Gateway, tokenTable } from "@fleet/gateway";
import type { ContextMessage } from "@fleet/protocol";
import { fakeReply, fakeText, fakeThinking, fakeToolUse } from "@fleet/testkit";
import { from } from "rxjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openApiChecker } from "./openapi-check.js";
import { call, type GatewayStack, startGatewayStack } from "./support.js";

const OPERATE = "agui-operate-token-0123456789";
const THREAD = "s-agui-1";
const tokens = tokenTable({ tokens: [{ token: OPERATE, tenant: "acme", role: "operate" }], tenants: {} });

let stack: GatewayStack;
/** A second gateway on the same deployment. */
let other: Gateway;
let checker: ReturnType<typeof openApiChecker>;

beforeAll(async () => {
  stack = await startGatewayStack({ gateway: { tokens, tenant: "acme" }, approvalTools: ["write"] });
  checker = openApiChecker((await call(stack.gateway.url, "GET", "/openapi.json")).body);
  other = await stack.startGateway();
}, 60_000);
afterAll(async () => {
  await other?.close();
  await stack?.stop();
});

/** One SSE frame as the client received it. */
interface RawFrame {
  id: string;
  event: BaseEvent;
}

function parseFrame(raw: string): RawFrame | undefined {
  let id: string | undefined;
  const data: string[] = [];
  for (const line of raw.split("\n")) {
    if (line.startsWith("id: ")) id = line.slice(4);
    else if (line.startsWith("data: ")) data.push(line.slice(6));
  }
  if (data.length === 0) return undefined;
  if (id === undefined) throw new Error(`a frame without id: ${raw}`);
  return { id, event: JSON.parse(data.join("\n")) as BaseEvent };
}

/** Where to cut a stream (after the frame it picks), and the gateway the stream then resumes from. */
interface Drop {
  after: (frame: RawFrame) => boolean;
  resumeAt: () => string;
}

/**
 * HttpAgent's `fetch`: the POST, and after a frame a drop picks, the connection is cut (its body
 * cancelled mid-stream) and the stream continues from `GET /v1/agui/{threadId}` with
 * `Last-Event-ID` set to the last frame received. HttpAgent reads one uninterrupted stream.
 */
function resumingFetch(thread: string, received: RawFrame[], drops: Drop[], resumes: string[]) {
  const fetchFn: HttpAgentFetchFn = async (url, init) => {
    const first = await fetch(url, init);
    checker.check("POST", "/v1/agui", first.status, first.headers.get("content-type"), undefined);
    if (!first.ok || !first.body) return first;
    const pending = [...drops];
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        const decoder = new TextDecoder();
        const encoder = new TextEncoder();
        let reader = first.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
        let buffer = "";
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            controller.close();
            return;
          }
          buffer += decoder.decode(value, { stream: true });
          let cutAt: string | undefined;
          let resumeAt = "";
          for (let end = buffer.indexOf("\n\n"); end !== -1 && cutAt === undefined; end = buffer.indexOf("\n\n")) {
            const raw = buffer.slice(0, end + 2);
            buffer = buffer.slice(end + 2);
            const frame = parseFrame(raw);
            if (!frame) continue;
            received.push(frame);
            controller.enqueue(encoder.encode(raw));
            const drop = pending[0];
            if (drop?.after(frame)) {
              pending.shift();
              cutAt = frame.id;
              resumeAt = drop.resumeAt();
            }
          }
          if (cutAt === undefined) continue;
          // The connection drops here: whatever else was on the way is lost.
          await reader.cancel();
          buffer = "";
          resumes.push(cutAt);
          const again = await fetch(`${resumeAt}/v1/agui/${thread}`, {
            headers: { authorization: `Bearer ${OPERATE}`, "last-event-id": cutAt },
          });
          checker.check("GET", `/v1/agui/${thread}`, again.status, again.headers.get("content-type"), undefined);
          if (!again.body) throw new Error(`resume answered ${again.status}`);
          reader = again.body.getReader();
        }
      },
    });
    return new Response(body, { status: first.status, headers: first.headers });
  };
  return fetchFn;
}

/** The client library's own verification of a run's events. */
const verified = (events: readonly BaseEvent[]) =>
  new Promise<number>((resolve, reject) => {
    let n = 0;
    verifyEvents()(from(events)).subscribe({ next: () => n++, error: reject, complete: () => resolve(n) });
  });

/** A frame id as a comparable position: `<seq>` is after every `<seq>.<k>`. */
const position = (id: string): [number, number] => {
  const [seq, k] = id.split(".");
  return [Number(seq), k === undefined ? Number.POSITIVE_INFINITY : Number(k)];
};
const isAfter = (a: string, b: string) => {
  const [sa, ka] = position(a);
  const [sb, kb] = position(b);
  return sa > sb || (sa === sb && ka > kb);
};

/** Every frame of one run as a fresh client reads it: GET after `after`, to the run's end. */
async function wholeRun(after: string): Promise<RawFrame[]> {
  const res = await fetch(`${stack.gateway.url}/v1/agui/${THREAD}?after=${after}`, {
    headers: { authorization: `Bearer ${OPERATE}` },
  });
  const text = await res.text();
  return text
    .split("\n\n")
    .map((raw) => parseFrame(raw))
    .filter((f): f is RawFrame => f !== undefined);
}

/** The transcript of the session's log in AG-UI's shape, ids left out (written apart from the gateway's). */
function transcriptOfLog(messages: readonly ContextMessage[]): unknown[] {
  const out: unknown[] = [];
  const text = (blocks: ReadonlyArray<{ type: string; text?: string }>, sep: string) =>
    blocks
      .filter((b) => b.type === "text")
      .map((b) => b.text)
      .join(sep);
  for (const m of messages) {
    if (m.role === "user")
      out.push({ role: "user", content: typeof m.content === "string" ? m.content : text(m.content, "\n") });
    else if (m.role === "assistant") {
      for (const b of m.content) {
        if (b.type === "thinking")
          out.push({ role: "reasoning", content: b.thinking, encryptedValue: b.thinkingSignature });
      }
      const calls = m.content.flatMap((b) => (b.type === "toolCall" ? [b] : []));
      const hasText = m.content.some((b) => b.type === "text");
      out.push({
        role: "assistant",
        ...(hasText ? { content: text(m.content, "") } : {}),
        ...(calls.length > 0
          ? {
              toolCalls: calls.map((c) => ({
                id: c.id,
                type: "function",
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      });
    } else if (m.role === "toolResult") {
      out.push({ role: "tool", toolCallId: m.toolCallId, content: text(m.content, "\n") });
    }
  }
  return out;
}

/** HttpAgent's messages without their ids, tool call arguments parsed. */
function transcriptOfAgent(messages: readonly Message[]): unknown[] {
  return messages.map((m) => {
    const { id: _id, ...rest } = m as Message & Record<string, unknown>;
    if (m.role === "assistant" && m.toolCalls) {
      return {
        ...rest,
        toolCalls: m.toolCalls.map((c) => ({
          ...c,
          function: { ...c.function, arguments: JSON.parse(c.function.arguments) },
        })),
      };
    }
    return rest;
  });
}

describe("gateway / AG-UI", () => {
  it("HttpAgent streams a thread: a tool call, an approval as an interrupt, resumed; drops resume without gap or duplicate", async () => {
    stack.fake.script(
      fakeReply([
        fakeThinking("The workspace first.", "sig-agui-1"),
        fakeText("Looking around."),
        fakeToolUse("ls", { path: "." }, { id: "toolu_agui_ls" }),
      ]),
      fakeReply([
        fakeText("Writing it."),
        fakeToolUse("write", { path: "agui.txt", content: "hi\n" }, { id: "toolu_agui_w" }),
      ]),
      fakeReply([fakeText("Done: agui.txt holds hi.", ["Done: ", "agui", ".txt ", "holds ", "hi."])], {
        eventDelayMs: 40,
      }),
    );
    const received: RawFrame[] = [];
    const resumes: string[] = [];
    const drops: Drop[] = [
      // Inside one event's frames: right after RUN_STARTED, before its STATE_SNAPSHOT; resumed from
      // another gateway (the frames are a fold of the log: any gateway names the same ones).
      {
        after: (f) => f.event.type === "RUN_STARTED" && f.id.includes(".") && received.length > 1,
        resumeAt: () => other.url,
      },
      // Mid-answer: after the second piece of the final text.
      {
        after: (f) => f.event.type === "TEXT_MESSAGE_CONTENT" && (f.event as { delta?: string }).delta === "agui",
        resumeAt: () => stack.gateway.url,
      },
    ];
    const agent = new HttpAgent({
      url: `${stack.gateway.url}/v1/agui`,
      threadId: THREAD,
      headers: { authorization: `Bearer ${OPERATE}` },
      fetch: resumingFetch(THREAD, received, drops, resumes),
    });
    const outcomes: unknown[] = [];
    const subscriber = { onRunFinishedEvent: (p: { outcome: string }) => void outcomes.push(p.outcome) };

    // Run 1: thinking, text and `ls` run; the `write` call waits for approval: an interrupt.
    agent.addMessage({ id: "u-1", role: "user", content: "Write agui.txt" });
    await agent.runAgent({ runId: "agui-run-1" }, subscriber);
    const run1 = received.slice();
    expect(run1[0]?.event).toMatchObject({ type: "RUN_STARTED", threadId: THREAD, runId: "agui-run-1" });
    const finished1 = run1.at(-1)?.event as BaseEvent & { outcome?: unknown; usage?: unknown[] };
    expect(finished1).toMatchObject({
      type: "RUN_FINISHED",
      outcome: {
        type: "interrupt",
        interrupts: [{ id: "toolu_agui_w", reason: "tool_approval", toolCallId: "toolu_agui_w" }],
      },
    });
    expect(finished1.usage?.[0]).toMatchObject({ provider: "anthropic", inputTokens: expect.any(Number) });
    const types1 = run1.map((f) => f.event.type);
    for (const t of ["REASONING_MESSAGE_CONTENT", "REASONING_ENCRYPTED_VALUE", "TOOL_CALL_RESULT", "STATE_DELTA"])
      expect(types1).toContain(t);
    expect(run1.find((f) => f.event.type === "REASONING_ENCRYPTED_VALUE")?.event).toMatchObject({
      encryptedValue: "sig-agui-1",
    });
    await expect(verified(run1.map((f) => f.event))).resolves.toBe(run1.length);
    expect(outcomes).toEqual(["interrupt"]);

    // Run 2: the approval, as `resume[]`; its stream is cut twice and resumed.
    await agent.runAgent(
      {
        runId: "agui-run-2",
        resume: [{ interruptId: "toolu_agui_w", status: "resolved", payload: { approved: true } }],
      },
      subscriber,
    );
    expect(outcomes).toEqual(["interrupt", "success"]);
    expect(readFileSync(join(stack.workspace, THREAD, "agui.txt"), "utf8")).toBe("hi\n");
    const run2 = received.slice(run1.length);
    expect(resumes).toHaveLength(2);
    // Each cut was mid-stream: the run went on over the resumed connection, to RUN_FINISHED.
    for (const cut of resumes) expect(run2.at(-1)?.id && isAfter(run2.at(-1)?.id as string, cut)).toBe(true);
    expect(run2.at(-1)?.event).toMatchObject({
      type: "RUN_FINISHED",
      runId: "agui-run-2",
      outcome: { type: "success" },
    });
    // No gap, no duplicate: exactly the frames a fresh reader of the whole run gets, ids increasing.
    const whole = await wholeRun(run1.at(-1)?.id as string);
    expect(run2.map((f) => f.id)).toEqual(whole.map((f) => f.id));
    expect(run2.map((f) => f.event)).toEqual(whole.map((f) => f.event));
    for (let i = 1; i < run2.length; i++) expect(isAfter(run2[i]?.id as string, run2[i - 1]?.id as string)).toBe(true);
    await expect(verified(run2.map((f) => f.event))).resolves.toBe(run2.length);
    expect(run2.find((f) => f.event.type === "TOOL_CALL_RESULT")?.event).toMatchObject({ toolCallId: "toolu_agui_w" });

    // The events fold (HttpAgent's own apply) to the transcript of the session's log.
    const session = await call(stack.gateway.url, "GET", `/v1/sessions/${THREAD}`, { token: OPERATE });
    expect(session.body.status).toBe("idle");
    expect(transcriptOfAgent(agent.messages)).toEqual(transcriptOfLog(session.body.messages));
    // user, reasoning, assistant (text + ls), tool, assistant (text + write), tool, assistant.
    expect(transcriptOfAgent(agent.messages)).toHaveLength(7);
    // The cut connections ended their streams on the gateways (none is left open).
    for (const url of [stack.gateway.url, other.url]) {
      const open = async () =>
        /^fleet_gateway_sse_clients (\d+)$/m.exec((await call(url, "GET", "/metrics")).text)?.[1];
      await expect.poll(open, { timeout: 10_000 }).toBe("0");
    }
    // The state: the spend as the session's own.
    expect(agent.state).toMatchObject({
      spend: { session: session.body.spend.session },
      queues: { steer: [], followUp: [] },
    });
  }, 90_000);

  it("a denied approval is a tool error and the run goes on; a prompt while a run waits is a RUN_ERROR (busy)", async () => {
    const thread = "s-agui-2";
    stack.fake.script(
      fakeReply([
        fakeText("Writing."),
        fakeToolUse("write", { path: "no.txt", content: "x\n" }, { id: "toolu_agui_no" }),
      ]),
      fakeReply("Understood: not written."),
    );
    const events: BaseEvent[] = [];
    const agent = new HttpAgent({
      url: `${stack.gateway.url}/v1/agui`,
      threadId: thread,
      headers: { authorization: `Bearer ${OPERATE}` },
    });
    const subscriber = { onEvent: ({ event }: { event: BaseEvent }) => void events.push(event) };
    agent.addMessage({ id: "u-2", role: "user", content: "Write no.txt" });
    await agent.runAgent({ runId: "agui-deny-1" }, subscriber);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt" } });

    // The session's run waits for the decision: a new prompt is refused, as a run that errors.
    const busy = await call(stack.gateway.url, "POST", "/v1/agui", {
      token: OPERATE,
      body: { threadId: thread, runId: "agui-busy", messages: [{ id: "u-3", role: "user", content: "and more" }] },
    });
    checker.check("POST", "/v1/agui", busy.status, busy.headers.get("content-type"), undefined);
    const frames = busy.text
      .split("\n\n")
      .map((raw) => parseFrame(raw))
      .filter((f): f is RawFrame => f !== undefined);
    expect(frames.map((f) => f.event)).toMatchObject([
      { type: "RUN_STARTED", runId: "agui-busy" },
      { type: "RUN_ERROR", code: "busy" },
    ]);
    await expect(verified(frames.map((f) => f.event))).resolves.toBe(2);

    const before = events.length;
    await agent.runAgent(
      {
        runId: "agui-deny-2",
        resume: [
          { interruptId: "toolu_agui_no", status: "resolved", payload: { approved: false, reason: "not there" } },
        ],
      },
      subscriber,
    );
    const run2 = events.slice(before);
    expect(run2.find((e) => e.type === "TOOL_CALL_RESULT")).toMatchObject({
      toolCallId: "toolu_agui_no",
      content: expect.stringContaining("not there"),
    });
    expect(run2.at(-1)).toMatchObject({ type: "RUN_FINISHED", runId: "agui-deny-2", outcome: { type: "success" } });
    await expect(verified(run2)).resolves.toBe(run2.length);
    expect(existsSync(join(stack.workspace, thread, "no.txt"))).toBe(false);
  }, 60_000);

  it("a run sent again answers the same run; a decision on no pending call is a RUN_ERROR; a bad Last-Event-ID 400", async () => {
    const post = async (body: unknown) => {
      const res = await call(stack.gateway.url, "POST", "/v1/agui", { token: OPERATE, body });
      checker.check("POST", "/v1/agui", res.status, res.headers.get("content-type"), undefined);
      return res.text
        .split("\n\n")
        .map((raw) => parseFrame(raw))
        .filter((f): f is RawFrame => f !== undefined);
    };
    // The first test's first run, sent again (same runId): its command is not run twice, and the
    // answer is that run's frames, as they were.
    const again = await post({
      threadId: THREAD,
      runId: "agui-run-1",
      messages: [{ id: "u-1", role: "user", content: "Write agui.txt" }],
    });
    const first = await wholeRun("0");
    expect(again.map((f) => f.id)).toEqual(first.map((f) => f.id));
    expect(again.at(-1)?.event).toMatchObject({
      type: "RUN_FINISHED",
      runId: "agui-run-1",
      outcome: { type: "interrupt" },
    });
    const unknown = await post({
      threadId: THREAD,
      runId: "agui-run-3",
      messages: [],
      resume: [{ interruptId: "toolu_none", status: "resolved", payload: { approved: true } }],
    });
    expect(unknown.map((f) => f.event)).toMatchObject([
      { type: "RUN_STARTED", runId: "agui-run-3" },
      { type: "RUN_ERROR", code: "not_found" },
    ]);
    const bad = await call(stack.gateway.url, "GET", `/v1/agui/${THREAD}`, {
      token: OPERATE,
      headers: { "last-event-id": "12.x" },
    });
    checker.check("GET", `/v1/agui/${THREAD}`, bad.status, bad.headers.get("content-type"), bad.body);
    expect(bad.status).toBe(400);
  });
});
