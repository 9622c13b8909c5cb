// The chaos run's webhook receiver: an HTTP server on 127.0.0.1 that records every delivery and
// answers a seeded share of them badly (500, or late), so retries happen under the faults too.
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { verifySignature } from "@fleet/gateway";
import { groupOf, partitionOf } from "@fleet/protocol";
import type { WebhookReceived } from "./checks/types.js";
import { createPrng } from "./prng.js";

/** The events the chaos webhook subscribes to. */
export const CHAOS_WEBHOOK_TYPES: readonly string[] = ["command_accepted", "tool_execution_end", "agent_end"];
/**
 * Shares of requests answered 500, and answered 2xx only after SLOW_MS. A webhook delivers one event
 * at a time (in order), so each of them holds back every later event: at about 20 matching events a
 * second, more would leave the webhook behind the run for good.
 */
const FAIL_SHARE = 0.05;
const SLOW_SHARE = 0.01;
const SLOW_MS = 1_000;

export interface WebhookReceiver {
  readonly url: string;
  /** Every POST received, in arrival order. */
  readonly received: WebhookReceived[];
  readonly failed: () => number;
  readonly slow: () => number;
  /** The secret to verify signatures with (every chaos webhook is registered with it). */
  setSecret(secret: string): void;
  close(): Promise<void>;
}

export async function startWebhookReceiver(seed: number): Promise<WebhookReceiver> {
  const rng = createPrng(seed ^ 0x5eed);
  const received: WebhookReceived[] = [];
  let secret = "";
  let failed = 0;
  let slow = 0;
  const server: Server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => {
      body += c;
    });
    req.on("end", () => {
      const draw = rng.next();
      let parsed: { seq?: number; sessionId?: string; event?: { type?: string } } = {};
      try {
        parsed = JSON.parse(body);
      } catch {}
      const record: WebhookReceived = {
        seq: parsed.seq ?? 0,
        sessionId: parsed.sessionId ?? "",
        type: parsed.event?.type ?? "",
        key: req.headers["idempotency-key"] as string | undefined,
        signed: verifySignature(secret, body, req.headers["fleet-signature"] as string | undefined),
        accepted: false,
      };
      received.push(record);
      if (draw < FAIL_SHARE) {
        failed++;
        res.writeHead(500).end("chaos says no");
        return;
      }
      const answer = () => {
        record.accepted = true;
        res.writeHead(204).end();
      };
      if (draw < FAIL_SHARE + SLOW_SHARE) {
        slow++;
        setTimeout(answer, SLOW_MS);
      } else answer();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    failed: () => failed,
    slow: () => slow,
    setSecret: (s) => {
      secret = s;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface ChaosWebhooks {
  /** Registration ids, in order. */
  ids: string[];
  /** The stream sequence from which the webhook delivers the session's events (its group's stream). */
  startSeqOf(sessionId: string): number;
  /** The prefix of the `Idempotency-Key` of the session's events: `<g>.` with K > 1, else none. */
  keyPrefixOf(sessionId: string): string;
}

/**
 * Registers the chaos webhook on the gateways (retried while they start): one for every session,
 * with one secret. With K > 1 stream groups it reads every group's stream (PROTOCOL "Webhooks"):
 * each group from its own start sequence, keyed `<g>.<seq>`.
 */
export async function registerChaosWebhooks(
  gatewayUrls: readonly string[],
  receiver: WebhookReceiver,
  topology: { partitions: number; groups: number },
): Promise<ChaosWebhooks> {
  const secret = randomBytes(24).toString("hex");
  receiver.setSecret(secret);
  const hook = await registerOne(gatewayUrls, receiver, secret);
  const starts = hook.startSeqs ?? [hook.startSeq];
  if (starts.length !== topology.groups) {
    throw new Error(`the chaos webhook reads ${starts.length} streams, the log has ${topology.groups} groups`);
  }
  const group = (sessionId: string) => groupOf(partitionOf(sessionId, topology.partitions), topology.groups);
  return {
    ids: [hook.id],
    startSeqOf: (sessionId) => starts[group(sessionId)] as number,
    keyPrefixOf: (sessionId) => (topology.groups > 1 ? `${group(sessionId)}.` : ""),
  };
}

async function registerOne(
  gatewayUrls: readonly string[],
  receiver: WebhookReceiver,
  secret: string,
): Promise<{ id: string; startSeq: number; startSeqs?: number[] }> {
  let last = "";
  for (let attempt = 0; attempt < 60; attempt++) {
    const base = gatewayUrls[attempt % gatewayUrls.length] as string;
    try {
      const res = await fetch(`${base}/v1/webhooks`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: receiver.url, events: CHAOS_WEBHOOK_TYPES, secret }),
      });
      const body = (await res.json()) as { id?: string; startSeq?: number; startSeqs?: number[]; error?: unknown };
      if (res.status === 201 && body.id && body.startSeq) {
        return { id: body.id, startSeq: body.startSeq, ...(body.startSeqs ? { startSeqs: body.startSeqs } : {}) };
      }
      last = `${res.status} ${JSON.stringify(body)}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`could not register the chaos webhook: ${last}`);
}
