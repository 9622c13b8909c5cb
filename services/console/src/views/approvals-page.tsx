// Pending tool approvals across sessions, refreshed every second; approve or deny each. The gateway
// answers from the store's approvals index (PROTOCOL change 44): a refresh costs in proportion to the
// approvals pending, not to the sessions in the store.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { linkTo } from "../router.js";
import { ApprovalButtons } from "./session-page.js";
import { show } from "./transcript.js";

interface Approval {
  sessionId: string;
  toolCallId: string;
  toolName: string;
  args: unknown;
  requestedAt: string;
}

export function ApprovalsPage() {
  const [approvals, setApprovals] = useState<Approval[] | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      const r = await api<{ approvals: Approval[] }>("GET", "/v1/approvals");
      if (stopped) return;
      if (r.ok) {
        setApprovals(r.body.approvals);
        setError("");
      } else setError(r.message);
    };
    void load();
    const timer = setInterval(load, 1_000);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, []);
  return (
    <div class="approvals">
      <h2>Pending approvals</h2>
      {error && <div class="error-text">{error}</div>}
      {approvals?.length === 0 && <div class="muted">nothing waiting for a decision</div>}
      {approvals?.map((a) => (
        <div key={`${a.sessionId}/${a.toolCallId}`} class="approval card" data-testid="approval-row">
          <div>
            <b>{a.toolName}</b> <code>{a.toolCallId}</code> in{" "}
            <a href={`/sessions/${a.sessionId}`} onClick={linkTo(`/sessions/${encodeURIComponent(a.sessionId)}`)}>
              {a.sessionId}
            </a>{" "}
            <span class="muted">requested {a.requestedAt}</span>
          </div>
          <pre>{show(a.args)}</pre>
          <ApprovalButtons sessionId={a.sessionId} toolCallId={a.toolCallId} />
        </div>
      ))}
    </div>
  );
}
