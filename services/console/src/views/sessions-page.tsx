// All sessions, paged by the store's cursor: live status, model, agent version, last activity, name; search by id,
// name or label prefix across all sessions (the gateway's `q`, the store's search index), paged the
// same way. Each refresh reads one page and the pending approvals (an index), never every session.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { linkTo, navigate } from "../router.js";

interface SessionRow {
  sessionId: string;
  name: string | null;
  status: string;
  updatedAt: string;
  seq: number;
  /** The agent version the session runs (absent: none). */
  agent?: { name: string; version: number };
}
interface Detail {
  model: { provider: string; modelId: string } | null;
}

const PAGE = 20;
const REFRESH_MS = 2_000;
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

  useEffect(() => {
    let stopped = false;
    const load = async () => {
      const r = await api<{ sessions: SessionRow[]; cursor?: string }>(
        "GET",
        `/v1/sessions?limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}${
          query ? `&q=${encodeURIComponent(query)}` : ""
        }`,
      );
      const a = await api<{ approvals: { sessionId: string }[] }>("GET", "/v1/approvals");
      if (stopped) return;
      if (!r.ok) return setError(r.message);
      setError("");
      setPage(r.body);
      if (a.ok) setAwaiting(new Set(a.body.approvals.map((x) => x.sessionId)));
      for (const s of r.body.sessions) {
        void api<Detail>("GET", `/v1/sessions/${encodeURIComponent(s.sessionId)}`).then((d) => {
          if (d.ok && !stopped) setDetails((prev) => ({ ...prev, [s.sessionId]: { model: d.body.model } }));
        });
      }
    };
    void load();
    const timer = setInterval(load, REFRESH_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [cursor, query]);

  const create = async () => {
    const r = await api<{ sessionId: string }>("POST", "/v1/sessions", {});
    if (r.ok) navigate(`/sessions/${encodeURIComponent(r.body.sessionId)}`);
    else setError(r.message);
  };
  const rows = page?.sessions ?? [];
  return (
    <div class="sessions">
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
                <td title={s.updatedAt}>{ago(s.updatedAt)}</td>
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

export function ago(iso: string): string {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (Number.isNaN(s)) return iso;
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(iso).toLocaleString();
}
