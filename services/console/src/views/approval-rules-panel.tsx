// The approval rules of the tenant, or of one session: shown as JSON, edited and saved
// (`GET`/`PUT /v1/approval-rules`, `/v1/sessions/{id}/approval-rules`; PROTOCOL "Tool approvals").
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";

const pathOf = (sessionId: string) =>
  sessionId ? `/v1/sessions/${encodeURIComponent(sessionId)}/approval-rules` : "/v1/approval-rules";

export function ApprovalRulesPanel() {
  const [sessionId, setSessionId] = useState("");
  const [text, setText] = useState("");
  const [note, setNote] = useState("");
  const load = async (sid: string) => {
    const r = await api<{ rules: unknown[] }>("GET", pathOf(sid));
    if (r.ok) {
      setText(JSON.stringify(r.body.rules, null, 2));
      setNote("");
    } else setNote(`failed: ${r.message}`);
  };
  useEffect(() => {
    void load("");
  }, []);
  const save = async () => {
    let rules: unknown;
    try {
      rules = JSON.parse(text);
    } catch (err) {
      setNote(`not JSON: ${(err as Error).message}`);
      return;
    }
    const r = await api<{ event?: { type: string; reason?: string } }>("PUT", pathOf(sessionId), { rules });
    if (!r.ok) setNote(`failed: ${r.message}`);
    else if (r.body.event?.type === "command_rejected") setNote(`rejected: ${r.body.event.reason ?? ""}`);
    else setNote("saved");
  };
  return (
    <div class="card approval-rules" data-testid="approval-rules">
      <h3>Approval rules</h3>
      <div class="muted">
        First match wins: the session's rules, then the tenant's, then the worker's FLEET_APPROVAL_TOOLS (ask). A rule:{" "}
        {"{"}tool, args?: {"{"}pointer, regex{"}"}, action: allow|ask|deny, expiresInMs?, reason?{"}"}.
      </div>
      <form
        class="actions"
        onSubmit={(e) => {
          e.preventDefault();
          void load(sessionId);
        }}
      >
        <input
          data-testid="rules-session"
          placeholder="session id (empty: the tenant's rules)"
          value={sessionId}
          onInput={(e) => setSessionId((e.target as HTMLInputElement).value.trim())}
        />
        <button type="submit" data-testid="rules-load">
          Load
        </button>
      </form>
      <textarea
        data-testid="rules-json"
        rows={8}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
      />
      <span class="actions">
        <button type="button" data-testid="rules-save" onClick={() => void save()}>
          Save {sessionId ? "session" : "tenant"} rules
        </button>
        {note && (
          <span class="note" data-testid="rules-note">
            {note}
          </span>
        )}
      </span>
    </div>
  );
}
