// The tenant's webhooks: state, counters, the last delivery attempts and failures; enable a disabled one.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { When } from "./when.js";

interface Attempt {
  seq: number;
  sessionId: string;
  eventType: string;
  attempt: number;
  at: number;
  durationMs: number;
  outcome: string;
  status?: number;
  address?: string;
  detail?: string;
}

interface Webhook {
  id: string;
  url: string;
  events: string[];
  sessionId: string | null;
  state: "active" | "disabled";
  disabledReason?: string;
  disabledAt?: number;
  status: {
    delivered: number;
    failed: number;
    consecutiveFailures: number;
    lastDeliveries: Attempt[];
    lastFailures: Attempt[];
  };
}

export function WebhooksPage() {
  const [hooks, setHooks] = useState<Webhook[] | null>(null);
  const [error, setError] = useState("");
  const [version, setVersion] = useState(0);
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      const list = await api<{ webhooks: { id: string }[] }>("GET", "/v1/webhooks");
      if (stopped) return;
      if (!list.ok) return setError(list.message);
      const details = await Promise.all(list.body.webhooks.map((w) => api<Webhook>("GET", `/v1/webhooks/${w.id}`)));
      if (stopped) return;
      setHooks(details.flatMap((d) => (d.ok ? [d.body] : [])));
      setError("");
    };
    void load();
    const timer = setInterval(load, 2_000);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [version]);
  return (
    <div class="webhooks">
      <h2>Webhooks</h2>
      {error && <div class="error-text">{error}</div>}
      {hooks?.length === 0 && <div class="muted">no webhooks registered</div>}
      {hooks?.map((w) => (
        <div key={w.id} class="card webhook" data-testid="webhook" data-state={w.state}>
          <div>
            <span class={`badge ${w.state}`} data-testid="webhook-state">
              {w.state}
            </span>{" "}
            <code>{w.id}</code> → <code>{w.url}</code>{" "}
            <span class="muted">
              {w.events.join(", ")} · {w.sessionId ?? "every session"}
            </span>
          </div>
          <div class="small" data-testid="webhook-counts">
            {w.status.delivered} delivered · {w.status.failed} failed attempts · {w.status.consecutiveFailures} failed
            in a row
          </div>
          {w.state === "disabled" && (
            <div class="error-text" data-testid="webhook-disabled">
              disabled {w.disabledAt ? <When ts={w.disabledAt} /> : ""}: {w.disabledReason}{" "}
              <button
                type="button"
                data-testid="webhook-enable"
                onClick={async () => {
                  const r = await api("POST", `/v1/webhooks/${w.id}/enable`);
                  if (!r.ok) setError(r.message);
                  setVersion((v) => v + 1);
                }}
              >
                enable
              </button>
            </div>
          )}
          <Attempts title="last deliveries" attempts={w.status.lastDeliveries} testId="webhook-deliveries" />
          <Attempts title="last failures" attempts={w.status.lastFailures} testId="webhook-failures" />
        </div>
      ))}
    </div>
  );
}

function Attempts({ title, attempts, testId }: { title: string; attempts: Attempt[]; testId: string }) {
  if (attempts.length === 0) return null;
  return (
    <details open={testId === "webhook-failures"}>
      <summary>
        {title} ({attempts.length})
      </summary>
      <table data-testid={testId}>
        <thead>
          <tr>
            <th>when</th>
            <th>event</th>
            <th>attempt</th>
            <th>outcome</th>
            <th>detail</th>
          </tr>
        </thead>
        <tbody>
          {attempts.map((a) => (
            <tr key={`${a.seq}/${a.attempt}/${a.at}`} data-outcome={a.outcome}>
              <td class="small">
                <When ts={a.at} />
              </td>
              <td>
                {a.eventType} <span class="muted">#{a.seq}</span> {a.sessionId}
              </td>
              <td>{a.attempt}</td>
              <td>
                {a.outcome}
                {a.status ? ` ${a.status}` : ""} <span class="muted">{a.durationMs} ms</span>
              </td>
              <td class="small">{a.detail ?? a.address ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}
