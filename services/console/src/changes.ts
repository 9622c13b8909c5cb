// The gateway's change feed (`GET /v1/changes`, PROTOCOL change 49) in the browser: views load what
// they show from the indexes when the feed opens and again when a frame concerns them, never on a
// timer. EventSource with a ticket (`POST /v1/changes/ticket`), followed again with a new ticket
// once the browser gives the stream up.
import { useEffect, useRef } from "preact/hooks";
import { api, gatewayUrl } from "./api.js";

/**
 * `opened`: the feed (re)opened, or a frame said `all` (a store took a group up or switched
 * namespaces, the gateway may have missed notices): what changed is unknown, load everything again.
 */
export type ChangeNotice = { kind: "opened" } | { kind: "changes"; sessions: string[]; approvals: boolean };

/** Wait before asking for a new ticket after the feed could not be opened. */
const RETRY_MS = 1_000;

/** The frame's data, or `undefined` when it is not a `changes` frame's (`all` is false when absent). */
export function changesOf(data: string): { sessions: string[]; approvals: boolean; all: boolean } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { sessions, approvals, all } = value as { sessions?: unknown; approvals?: unknown; all?: unknown };
  if (!Array.isArray(sessions) || !sessions.every((s) => typeof s === "string")) return undefined;
  if (typeof approvals !== "boolean") return undefined;
  if (all !== undefined && typeof all !== "boolean") return undefined;
  return { sessions, approvals, all: all === true };
}

/** Opens the feed once; resolves when the browser gives it up (the ticket expired) or `signal` aborts. */
async function followOnce(signal: AbortSignal, on: (notice: ChangeNotice) => void): Promise<boolean> {
  const ticket = await api<{ url: string }>("POST", "/v1/changes/ticket");
  if (!ticket.ok || signal.aborted) return false;
  return new Promise<boolean>((resolve) => {
    const source = new EventSource(gatewayUrl(ticket.body.url));
    let opened = false;
    source.onopen = () => {
      opened = true;
      on({ kind: "opened" });
    };
    source.addEventListener("changes", (e) => {
      const changes = changesOf((e as MessageEvent<string>).data);
      if (changes?.all) on({ kind: "opened" });
      else if (changes) on({ kind: "changes", sessions: changes.sessions, approvals: changes.approvals });
    });
    const finish = () => {
      source.close();
      signal.removeEventListener("abort", finish);
      resolve(opened);
    };
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) finish();
    };
    signal.addEventListener("abort", finish);
  });
}

/** One notice for two: `opened` wins (everything is loaded again), else the changes together. */
export function mergeNotices(a: ChangeNotice | undefined, b: ChangeNotice): ChangeNotice {
  if (!a) return b;
  if (a.kind === "opened" || b.kind === "opened") return { kind: "opened" };
  return {
    kind: "changes",
    sessions: [...new Set([...a.sessions, ...b.sessions])],
    approvals: a.approvals || b.approvals,
  };
}

/**
 * Follows the change feed while the component is mounted; `on` (the latest one rendered) gets the
 * notices, merged so that it runs at most once per `minGapMs`.
 */
export function useChanges(on: (notice: ChangeNotice) => void, minGapMs = 0): void {
  const latest = useRef(on);
  latest.current = on;
  useEffect(() => {
    const abort = new AbortController();
    let pending: ChangeNotice | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let last = Number.NEGATIVE_INFINITY;
    const deliver = () => {
      timer = undefined;
      const notice = pending;
      pending = undefined;
      if (!notice || abort.signal.aborted) return;
      last = performance.now();
      latest.current(notice);
    };
    const note = (notice: ChangeNotice) => {
      pending = mergeNotices(pending, notice);
      if (timer === undefined) timer = setTimeout(deliver, Math.max(0, last + minGapMs - performance.now()));
    };
    void (async () => {
      while (!abort.signal.aborted) {
        const opened = await followOnce(abort.signal, note);
        if (!abort.signal.aborted) await new Promise((r) => setTimeout(r, opened ? 100 : RETRY_MS));
      }
    })();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [minGapMs]);
}
