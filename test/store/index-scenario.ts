// A random mix of runs, names, labels, approvals, agent versions (change 54) and deletions, and the
// answers a full scan of it gives, to compare the store's indexes (PROTOCOL change 44) with: on one
// Redis (indexes.test.ts) and on a Redis Cluster (cluster.test.ts).
import {
  type EventBody,
  type FleetEvent,
  foldPendingApprovals,
  foldSessionTreeEvents,
  type PendingApprovals,
  partitionOf,
} from "@fleet/protocol";
import { prng, SYNTHETIC_CONFIG } from "@fleet/session-store/testing";
import { expect } from "vitest";
import { type Fixture, type Publisher, query, waitFor } from "./support.js";

const NAMES = ["Alpha build", "Beta release notes", "gamma", "Delta: fix the cache", "beta-two"];
const LABELS = ["release", "review", "hot fix", "Reviewed"];
const QUERIES = ["ix-1", "ix-", "beta", "release", "re", "notes", "fix", "cache", "gamma", "zzz", "IX-0", "1", "2"];

/** Random logs of sessions `ix-<i>`: runs, names, labels, approvals asked and decided, agents, deletions. */
export function randomLogs(count: number, seed: number): Map<string, FleetEvent[]> {
  const rnd = prng(seed);
  // Agent versions draw from their own sequence, so the rest of the mix is what it was without them.
  const agentRnd = prng(seed + 1);
  const someVersion = () => ({ name: agentRnd() < 0.5 ? "ag-a" : "ag-b", version: 1 + Math.floor(agentRnd() * 3) });
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const logs = new Map<string, FleetEvent[]>();
  let ts = 1_770_000_000_000;
  for (let i = 0; i < count; i++) {
    const sid = `ix-${i}`;
    const log: FleetEvent[] = [];
    let n = 0;
    let leaf: string | null = null;
    let running = false;
    let calls: string[] = [];
    const entries: string[] = [];
    const add = (body: EventBody, entry = false) => {
      const id = `${sid}-e${++n}`;
      const meta = { v: 1 as const, id, sessionId: sid, ts: ++ts, producer: "index-test" };
      if (entry) {
        log.push({ ...body, entry: { id, parentId: leaf }, meta } as FleetEvent);
        leaf = id;
        entries.push(id);
      } else log.push({ ...body, meta } as FleetEvent);
    };
    const create = () => {
      leaf = null;
      entries.length = 0;
      running = false;
      calls = [];
      if (agentRnd() < 0.6) add({ type: "session_created", config: SYNTHETIC_CONFIG, agent: someVersion() });
      else add({ type: "session_created", config: SYNTHETIC_CONFIG });
    };
    create();
    const steps = 4 + Math.floor(rnd() * 16);
    for (let s = 0; s < steps; s++) {
      if (agentRnd() < 0.15) add({ type: "agent_change", agent: someVersion() });
      const r = rnd();
      if (r < 0.15) add({ type: "session_info", name: pick(NAMES) } as EventBody, true);
      else if (r < 0.3 && entries.length > 0) {
        add({ type: "label", targetId: pick(entries), label: rnd() < 0.25 ? null : pick(LABELS) } as EventBody, true);
      } else if (r < 0.45 && !running) {
        add({ type: "agent_start" });
        running = true;
      } else if (r < 0.6 && running) {
        const call = `call-${n}`;
        calls.push(call);
        add({ type: "tool_approval_requested", toolCallId: call, toolName: "write", args: { n } });
      } else if (r < 0.7 && calls.length > 0) {
        const call = calls.shift() as string;
        if (rnd() < 0.5) add({ type: "tool_approval_resolved", toolCallId: call, approved: rnd() < 0.5 });
        else {
          add({
            type: "tool_execution_end",
            toolCallId: call,
            toolName: "write",
            result: { content: [{ type: "text", text: "done" }] },
            isError: false,
          } as EventBody);
        }
      } else if (r < 0.85 && running) {
        add({ type: "agent_end", messages: [] });
        running = false;
        calls = [];
      } else if (r < 0.9) {
        add({ type: "session_deleting", op: "delete", by: "index-test", events: n, spend: [] } as EventBody);
        if (rnd() < 0.5) break;
        create();
      }
    }
    logs.set(sid, log);
  }
  return logs;
}

interface Expected {
  /** `name@version` → sessions that run it. */
  agents: Record<string, number>;
  running: string[];
  approvals: Array<{ sessionId: string; toolCallId: string; seq: number }>;
  search: Map<string, string[]>;
}

/** Words' starts of a text, lower-cased: what a prefix search of a name or an id matches. */
const fromWords = (text: string) => {
  const t = text.toLowerCase();
  return [...t.matchAll(/[\p{L}\p{N}]+/gu)].map((m) => t.slice(m.index));
};

/** The answers a full scan gives: every session's log folded from its last deletion on. */
function fullScan(logs: Map<string, FleetEvent[]>, seqs: Map<string, number[]>): Expected {
  const running: string[] = [];
  const approvals: Expected["approvals"] = [];
  const texts = new Map<string, string[]>();
  const agents: Record<string, number> = {};
  for (const [sid, log] of logs) {
    const seq = seqs.get(sid) ?? [];
    const cut = log.findLastIndex((e) => e.type === "session_deleting") + 1;
    const live = log.slice(cut);
    if (live.length === 0) continue;
    let isRunning = false;
    let pending: PendingApprovals = new Map();
    live.forEach((e, i) => {
      if (e.type === "agent_start") isRunning = true;
      if (e.type === "agent_end") isRunning = false;
      pending = foldPendingApprovals(pending, seq[cut + i] as number, e);
    });
    if (isRunning) running.push(sid);
    for (const a of pending.values()) approvals.push({ sessionId: sid, toolCallId: a.toolCallId, seq: a.seq });
    const tree = foldSessionTreeEvents(live);
    if (tree.agent) {
      const ref = `${tree.agent.name}@${tree.agent.version}`;
      agents[ref] = (agents[ref] ?? 0) + 1;
    }
    texts.set(sid, [
      ...fromWords(sid),
      ...fromWords(tree.name ?? ""),
      ...Object.values(tree.labels).map((l) => l.toLowerCase()),
    ]);
  }
  const search = new Map<string, string[]>();
  for (const q of QUERIES) {
    const needle = q.toLowerCase();
    search.set(
      q,
      [...texts]
        .filter(([, ts]) => ts.some((t) => t.startsWith(needle)))
        .map(([sid]) => sid)
        .sort(),
    );
  }
  return { agents, running: running.sort(), approvals, search };
}

/** Every page of a paged index query, sessions deduplicated. */
async function allPages(
  f: Fixture,
  op: "list_running" | "search_sessions",
  body: Record<string, unknown>,
): Promise<string[]> {
  const ids = new Set<string>();
  let cursor: string | undefined;
  for (let pages = 0; pages < 1_000; pages++) {
    const r = (await query(f.nc, op, { ...body, limit: 3, ...(cursor ? { cursor } : {}) })) as {
      ok: boolean;
      sessions?: Array<{ sessionId: string }>;
      cursor?: string;
      error?: string;
    };
    if (!r.ok) throw new Error(`${op}: ${r.error}`);
    for (const s of r.sessions ?? []) ids.add(s.sessionId);
    cursor = r.cursor;
    if (!cursor) break;
  }
  return [...ids].sort();
}

async function indexAnswers(f: Fixture): Promise<Expected> {
  const approvals = (await query(f.nc, "list_approvals", {})) as {
    ok: boolean;
    approvals: Array<{ sessionId: string; toolCallId: string; seq: number; requestedAt: number }>;
  };
  expect(approvals.ok).toBe(true);
  const search = new Map<string, string[]>();
  for (const q of QUERIES) search.set(q, await allPages(f, "search_sessions", { q }));
  const counted = (await query(f.nc, "count_agent_sessions", {})) as unknown as {
    counts: Array<{ name: string; version: number; sessions: number }>;
  };
  return {
    agents: Object.fromEntries(counted.counts.map((c) => [`${c.name}@${c.version}`, c.sessions])),
    running: await allPages(f, "list_running", {}),
    approvals: approvals.approvals.map(({ sessionId, toolCallId, seq }) => ({ sessionId, toolCallId, seq })),
    search,
  };
}

/** Waits until every partition applied the last event published into it (deleted sessions have no keys). */
export async function waitApplied(f: Fixture, publisher: Publisher) {
  const last = new Map<number, number>();
  for (const [sid, seq] of publisher.lastSeq) {
    const p = partitionOf(sid, f.partitions);
    last.set(p, Math.max(last.get(p) ?? 0, seq));
  }
  await waitFor(
    "every partition to be applied",
    async () => {
      const ns = await f.redis.hget(`${f.prefix}:ctl`, "ns");
      if (!ns) return false;
      for (const [p, seq] of last) {
        if (Number((await f.redis.hget(`${f.prefix}:${ns}:applied`, String(p))) ?? 0) < seq) return false;
      }
      return true;
    },
    60_000,
  );
}

const byRequest = (xs: Expected["approvals"]) => [...xs].sort((a, b) => a.seq - b.seq);

export async function expectIndexesMatch(f: Fixture, logs: Map<string, FleetEvent[]>, publisher: Publisher) {
  const expected = fullScan(logs, publisher.seqs);
  const got = await indexAnswers(f);
  expect(got.running).toEqual(expected.running);
  expect(got.agents).toEqual(expected.agents);
  expect(byRequest(got.approvals)).toEqual(byRequest(expected.approvals));
  for (const q of QUERIES) expect({ q, found: got.search.get(q) }).toEqual({ q, found: expected.search.get(q) });
  return expected;
}
