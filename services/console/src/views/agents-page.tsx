// The tenant's agents: each with its latest version and its sessions; opened, every version (written
// once, never changed) with its settings and how many sessions run it (the store's agents index).
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";

interface AgentRow {
  name: string;
  latest: number;
  updatedAt: number;
  sessions: number;
}
interface Version {
  name: string;
  version: number;
  description?: string;
  createdAt: number;
  sessions: number;
  settings: {
    model?: { provider: string; modelId: string };
    thinkingLevel?: string;
    systemPrompt?: string;
    activeTools?: string[] | null;
    approvalRules?: unknown[];
    budget?: unknown;
    compaction?: { enabled: boolean };
  };
}

const REFRESH_MS = 2_000;

/** The settings of a version in one line. */
function summary(s: Version["settings"]): string {
  return [
    s.model ? `${s.model.provider}/${s.model.modelId}` : undefined,
    s.thinkingLevel ? `thinking ${s.thinkingLevel}` : undefined,
    s.activeTools !== undefined
      ? `tools ${s.activeTools === null ? "all" : s.activeTools.join(", ") || "none"}`
      : undefined,
    s.approvalRules?.length ? `${s.approvalRules.length} approval rule(s)` : undefined,
    s.budget ? "budget" : undefined,
    s.compaction ? `compaction ${s.compaction.enabled ? "on" : "off"}` : undefined,
  ]
    .filter(Boolean)
    .join(" · ");
}

export function AgentsPage() {
  const [agents, setAgents] = useState<AgentRow[] | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [versions, setVersions] = useState<Version[] | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      const list = await api<{ agents: AgentRow[] }>("GET", "/v1/agents");
      if (stopped) return;
      if (!list.ok) return setError(list.message);
      setAgents(list.body.agents);
      if (open) {
        const detail = await api<{ versions: Version[] }>("GET", `/v1/agents/${encodeURIComponent(open)}`);
        if (stopped) return;
        if (!detail.ok) return setError(detail.message);
        setVersions(detail.body.versions);
      }
      setError("");
    };
    void load();
    const timer = setInterval(load, REFRESH_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [open]);
  return (
    <div class="agents">
      <h2>Agents</h2>
      {error && <div class="error-text">{error}</div>}
      {agents?.length === 0 && (
        <div class="muted" data-testid="no-agents">
          no agents (create one with <code>fleet agent create</code> or <code>POST /v1/agents</code>)
        </div>
      )}
      <table data-testid="agents-table">
        <thead>
          <tr>
            <th>agent</th>
            <th>latest</th>
            <th>sessions</th>
            <th>updated</th>
          </tr>
        </thead>
        <tbody>
          {agents?.map((a) => (
            <tr key={a.name} data-testid="agent-row" data-agent={a.name}>
              <td>
                <button
                  type="button"
                  class="link"
                  data-testid="agent-open"
                  onClick={() => {
                    setVersions(null);
                    setOpen(open === a.name ? null : a.name);
                  }}
                >
                  {a.name}
                </button>
              </td>
              <td>v{a.latest}</td>
              <td data-testid="agent-sessions">{a.sessions}</td>
              <td>{new Date(a.updatedAt).toISOString()}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {open && (
        <div class="card" data-testid="agent-versions">
          <h3>{open}</h3>
          {versions === null && <div class="muted">loading…</div>}
          {versions?.map((v) => (
            <div key={v.version} class="version" data-testid="version-row" data-version={v.version}>
              <b>v{v.version}</b> <span data-testid="version-sessions">{v.sessions}</span> session(s){" "}
              <span class="muted small">{new Date(v.createdAt).toISOString()}</span>
              <div class="small">{summary(v.settings) || "defaults"}</div>
              {v.description && <div class="muted small">{v.description}</div>}
              {v.settings.systemPrompt && (
                <pre class="small" data-testid="version-prompt">
                  {v.settings.systemPrompt}
                </pre>
              )}
            </div>
          ))}
        </div>
      )}
    </div>
  );
}
