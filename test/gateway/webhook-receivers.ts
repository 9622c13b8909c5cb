// Webhook receivers and event publishing for the webhook tests: real HTTP servers on loopback
// addresses, and events appended straight to a session's subject.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { encodeEvent, type FleetEvent, partitionOf, subjects } from "@fleet/protocol";
import { newId } from "@fleet/runtime";
import type { JetStreamClient } from "@nats-io/jetstream";

export interface ReceivedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The parsed delivery (`{webhookId, sessionId, seq, event}`), when the body is one. */
  seq: number;
  type: string;
}

export interface Receiver {
  readonly host: string;
  readonly port: number;
  /** `http://<host>:<port>`. */
  readonly base: string;
  readonly requests: ReceivedRequest[];
  close(): Promise<void>;
}

/**
 * An HTTP server on `host` (and `port`, default any) that records every request and lets `answer`
 * reply (default 204). An answer that never ends the response holds the request open.
 */
export async function startReceiver(
  host: string,
  answer: (req: ReceivedRequest, res: ServerResponse) => void = (_req, res) => void res.writeHead(204).end(),
  port = 0,
): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => {
      body += c;
    });
    req.on("end", () => {
      let parsed: { seq?: number; event?: { type?: string } } = {};
      try {
        parsed = JSON.parse(body);
      } catch {}
      const received: ReceivedRequest = {
        path: req.url ?? "",
        headers: req.headers,
        body,
        seq: parsed.seq ?? 0,
        type: parsed.event?.type ?? "",
      };
      requests.push(received);
      answer(received, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    host,
    port: bound,
    base: `http://${host}:${bound}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type Draft = { type: "custom"; data: unknown } | { type: "session_info"; name: string } | { type: "leaf" };

/** Appends events to a session's subject as a loop would (entries chained); their stream sequences. */
export async function publishEvents(
  js: JetStreamClient,
  partitions: number,
  sessionId: string,
  drafts: readonly Draft[],
): Promise<number[]> {
  const subject = subjects.event(partitionOf(sessionId, partitions), sessionId);
  const seqs: number[] = [];
  let parentId: string | null = null;
  for (const draft of drafts) {
    const id = newId();
    const meta = { v: 1, id, sessionId, ts: Date.now(), producer: "webhook-test" } as const;
    const event: FleetEvent =
      draft.type === "custom"
        ? { type: "custom", customType: "t", data: draft.data, entry: { id, parentId }, meta }
        : draft.type === "session_info"
          ? { type: "session_info", name: draft.name, entry: { id, parentId }, meta }
          : { type: "leaf", targetId: parentId, meta };
    const encoded = encodeEvent(event);
    if (!encoded.ok) throw new Error(encoded.error);
    seqs.push((await js.publish(subject, encoded.bytes, { msgID: id })).seq);
    if (draft.type !== "leaf") parentId = id;
  }
  return seqs;
}
