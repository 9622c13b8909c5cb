// Pending tool approvals across sessions; approve (as asked, or with edited arguments) or deny
// each; and the approval rules. The list is the gateway's answer from the store's approvals index
// (PROTOCOL change 44), loaded when the change feed opens and again when it says approvals may have
// changed (change 49): nothing is asked while nothing happens.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, command } from "../api.js";
import { useChanges } from "../changes.js";
import { linkTo } from "../router.js";
import { ApprovalRulesPanel } from "./approval-rules-panel.js";
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
  /** Answers of earlier loads that come back after a later one's are dropped. */
  const loads = useRef(0);
  const load = async () => {
    const mine = ++loads.current;
    const r = await api<{ approvals: Approval[] }>("GET", "/v1/approvals");
    if (mine !== loads.current) return;
    if (r.ok) {
      setApprovals(r.body.approvals);
      setError("");
    } else setError(r.message);
  };
  useEffect(() => {
    void load();
    return () => {
      loads.current = Number.NaN; // unmounted: no answer is applied
    };
  }, []);
  useChanges((notice) => {
    if (notice.kind === "opened" || notice.approvals) void load();
  });
  return (
    <div class="approvals">
      <ApprovalRulesPanel />
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
          <EditedApproval approval={a} />
        </div>
      ))}
    </div>
  );
}

/**
 * Approve with edited arguments: the call runs with the JSON typed here (`approve_tool_call
 * {args}`); the loop refuses arguments that do not fit the tool's schema.
 */
function EditedApproval({ approval }: { approval: Approval }) {
  const [open, setOpen] = useState(false);
  const [text, setText] = useState(() => JSON.stringify(approval.args, null, 2));
  const [note, setNote] = useState("");
  const approve = async () => {
    let args: unknown;
    try {
      args = JSON.parse(text);
    } catch (err) {
      setNote(`not JSON: ${(err as Error).message}`);
      return;
    }
    const r = await command(approval.sessionId, { type: "approve_tool_call", toolCallId: approval.toolCallId, args });
    setNote(r.ok ? "approved with edits" : `failed: ${r.message}`);
  };
  if (!open) {
    return (
      <button type="button" data-testid="edit-args" onClick={() => setOpen(true)}>
        Edit arguments…
      </button>
    );
  }
  return (
    <div class="edited-approval">
      <textarea
        data-testid="edited-args"
        rows={6}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
      />
      <span class="actions">
        <button type="button" data-testid="approve-edited" onClick={() => void approve()}>
          Approve with these arguments
        </button>
        {note && (
          <span class="note" data-testid="edited-note">
            {note}
          </span>
        )}
      </span>
    </div>
  );
}
