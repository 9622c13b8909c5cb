// Invariant 7: a webhook delivers every matching event of the log at least once, in order per
// session: the first delivery of each event comes after the first delivery of every earlier one;
// every delivery is signed and carries the event's sequence as its Idempotency-Key (after the
// prefix `<g>.` of the session's group for a webhook for every session on a log of K > 1 groups).
import type { SessionLog, Violation, WebhookReceived } from "./types.js";

/** The sequences of the log's events the webhook must deliver: its types, from its start sequence. */
export function webhookExpected(log: SessionLog, types: ReadonlySet<string>, startSeq: number): number[] {
  const seqs = log.seqs ?? [];
  return log.events.flatMap((e, i) => {
    const seq = seqs[i];
    return seq !== undefined && seq >= startSeq && types.has(e.type) ? [seq] : [];
  });
}

export function checkWebhooks(
  log: SessionLog,
  received: readonly WebhookReceived[],
  types: ReadonlySet<string>,
  startSeq: number,
  keyPrefix = "",
): Violation[] {
  const out: Violation[] = [];
  const v = (kind: string, detail: string) =>
    out.push({ invariant: "webhooks", sessionId: log.sessionId, kind, detail });
  const expected = webhookExpected(log, types, startSeq);
  const typeAt = new Map<number, string>();
  const seqs = log.seqs ?? [];
  log.events.forEach((e, i) => {
    const seq = seqs[i];
    if (seq !== undefined) typeAt.set(seq, e.type);
  });
  const firsts: number[] = [];
  const seen = new Set<number>();
  for (const r of received) {
    if (r.key !== `${keyPrefix}${r.seq}`) v("webhook_key", `delivery of ${r.seq} has Idempotency-Key ${r.key}`);
    if (!r.signed) v("webhook_signature", `delivery of ${r.seq} is not signed with the webhook's secret`);
    if (typeAt.get(r.seq) !== r.type || !types.has(r.type)) {
      v("webhook_foreign", `delivery of ${r.seq} (${r.type}) is not a matching event of the log`);
    }
    if (!seen.has(r.seq)) {
      seen.add(r.seq);
      firsts.push(r.seq);
    }
  }
  const delivered = new Set(received.filter((r) => r.accepted).map((r) => r.seq));
  const missing = expected.filter((seq) => !delivered.has(seq));
  if (missing.length > 0) {
    v(
      "webhook_missing",
      `${missing.length} of ${expected.length} matching events never delivered (answered 2xx), the first ${missing[0]}`,
    );
  }
  for (let i = 1; i < firsts.length; i++) {
    if ((firsts[i] as number) < (firsts[i - 1] as number)) {
      v("webhook_order", `event ${firsts[i]} was first delivered after ${firsts[i - 1]}`);
      break;
    }
  }
  return out;
}
