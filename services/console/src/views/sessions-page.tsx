// All sessions, paged by the store's cursor: live status, model, agent version, last activity, name; search by id,
// name or label prefix across all sessions (the gateway's `q`, the store's search index), paged the
// same way. A page (one index query), the pending approvals (an index) and the rows' details are
// loaded when the page, the search or the change feed (PROTOCOL change 49) says so: when the feed
// opens, at most once a second while sessions change (details only of the rows that changed, the
// approvals only when they may have), and never while nothing happens.
import { useEffect, useRef, useState } from "preact/hooks";
import { api } from "../api.js";
import { type ChangeNotice, mergeNotices, useChanges } from "../changes.js";
import { linkTo, navigate } from "../router.js";
import { SessionImport } from "./session-import.js";
import { TenantBudget } from "./tenant-budget.js";
import { When } from "./when.js";

interface SessionRow {
  sessionId: string;
  name: string | null;
  status: string;
  /** Epoch ms of the session's last event. */
  updatedAt: number;
  seq: number;
  /** The agent version the session runs (absent: none). */
  agent?: { name: string; version: number };
}
interface Detail {
  model: { provider: string; modelId: string } | null;
}

const PAGE = 20;
/** Least time between two loads driven by the change feed. */
const REFRESH_MIN_MS = 1_000;
/** Typing pauses this long before the search goes to the gateway. */
const SEARCH_DEBOUNCE_MS = 250;

export function SessionsPage() {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState<{ sessions: SessionRow[]; cursor?: string } | null>(null);
  const [details, setDetails] = useState<Record<string, Detail>>({});
  const [awaiting, setAwaiting] = useState<Set<string>>(new Set());
  const [search, setSearch] = useState("");
  /** The search the list shows (`search` once typing pauses). */
  const [query, setQuery] = useState("");
  const [error, setError] = useState("");
  /** Sessions whose details were asked for (again only when the feed says they changed). */
  const known = useRef(new Set<string>());
  const cursor = cursors[cursors.length - 1];

  useEffect(() => {
    const needle = search.trim();
    if (needle === query) return;
    const timer = setTimeout(() => {
      setQuery(needle);
      setCursors([undefined]);
      setPage(null);
    }, SEARCH_DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [search, query]);

  /** What the next load must refresh: everything (`opened`), or the rows and approvals that changed. */
  const due = useRef<ChangeNotice | undefined>({ kind: "opened" });
  const [tick, setTick] = useState(0);
  useChanges((notice) => {
    due.current = mergeNotices(due.current, notice);
    setTick((t) => t + 1);
  }, REFRESH_MIN_MS);
  /** Answers of earlier page loads that come back after a later one's are dropped. */
  const loads = useRef(0);
  // `tick`: the change feed asks for a load.
  useEffect(() => {
    let stopped = false;
    const mine = ++loads.current;
    const notice = due.current;
    due.current = undefined;
    const changed = notice?.kind === "changes" ? new Set(notice.sessions) : undefined;
    let applied = false;
    const load = async () => {
      const r = await api<{ sessions: SessionRow[]; cursor?: string }>(
        "GET",
        `/v1/sessions?limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}${
          query ? `&q=${encodeURIComponent(query)}` : ""
        }`,
      );
      const a =
        notice?.kind === "opened" || (notice?.kind === "changes" && notice.approvals)
          ? await api<{ approvals: { sessionId: string }[] }>("GET", "/v1/approvals")
          : undefined;
      if (stopped || mine !== loads.current) return;
      applied = true;
      if (!r.ok) return setError(r.message);
      setError("");
      setPage(r.body);
      if (a?.ok) setAwaiting(new Set(a.body.approvals.map((x) => x.sessionId)));
      for (const s of r.body.sessions) {
        if (changed && !changed.has(s.sessionId) && known.current.has(s.sessionId)) continue;
        known.current.add(s.sessionId);
        void api<Detail>("GET", `/v1/sessions/${encodeURIComponent(s.sessionId)}`).then((d) => {
          if (d.ok && !stopped) setDetails((prev) => ({ ...prev, [s.sessionId]: { model: d.body.model } }));
        });
      }
    };
    void load();
    return () => {
      stopped = true;
      // Superseded before its answer: the next load refreshes what this one was to.
      if (!applied && notice) due.current = mergeNotices(due.current, notice);
    };
  }, [cursor, query, tick]);

  const create = async () => {
    const r = await api<{ sessionId: string }>("POST", "/v1/sessions", {});
    if (r.ok) navigate(`/sessions/${encodeURIComponent(r.body.sessionId)}`);
    else setError(r.message);
  };
  const rows = page?.sessions ?? [];
  return (
    <div class="sessions">
      <TenantBudget />
      <div class="toolbar">
        <input
          data-testid="search"
          placeholder="search by name, label or id"
          value={search}
          onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
        />
        <button type="button" data-testid="new-session" onClick={create}>
          New session
        </button>
        <SessionImport />
      </div>
      {error && <div class="error-text">{error}</div>}
      <table data-testid="sessions-table">
        <thead>
          <tr>
            <th>name</th>
            <th>status</th>
            <th>model</th>
            <th>agent</th>
            <th>last activity</th>
            <th>events</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((s) => {
            const status = awaiting.has(s.sessionId) ? "awaiting approval" : s.status;
            const model = details[s.sessionId]?.model;
            return (
              <tr key={s.sessionId} data-testid="session-row">
                <td>
                  <a href={`/sessions/${s.sessionId}`} onClick={linkTo(`/sessions/${encodeURIComponent(s.sessionId)}`)}>
                    {s.name ?? s.sessionId}
                  </a>
                  {s.name && <div class="muted small">{s.sessionId}</div>}
                </td>
                <td>
                  <span class={`badge ${status.replace(/ /g, "-")}`}>{status}</span>
                </td>
                <td>{model ? `${model.provider}/${model.modelId}` : "—"}</td>
                <td data-testid="session-agent">{s.agent ? `${s.agent.name}@${s.agent.version}` : "—"}</td>
                <td>
                  <When ts={s.updatedAt} testId="last-activity" />
                </td>
                <td>{s.seq}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {page && rows.length === 0 && (
        <div class="muted" data-testid="no-sessions">
          {query ? `no sessions match “${query}”${page.cursor ? " on this page" : ""}` : "no sessions yet"}
        </div>
      )}
      <div class="pager">
        <button
          type="button"
          data-testid="page-newer"
          disabled={cursors.length < 2}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          ← newer
        </button>
        <span class="muted" data-testid="page-number">
          page {cursors.length}
        </span>
        <button
          type="button"
          data-testid="page-older"
          disabled={!page?.cursor}
          onClick={() => setCursors([...cursors, page?.cursor])}
        >
          older →
        </button>
      </div>
    </div>
  );
}
