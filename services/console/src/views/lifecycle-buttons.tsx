// Delete or archive a session (asks first), and restore an archived one: the gateway's lifecycle
// routes. A refusal (a run is active, the session is being deleted) is shown as it came.
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { navigate } from "../router.js";

type Op = "delete" | "archive";

const REQUEST: Record<Op, { method: "DELETE" | "POST"; path: (id: string) => string; question: string }> = {
  delete: {
    method: "DELETE",
    path: (id) => `/v1/sessions/${encodeURIComponent(id)}`,
    question: "Delete this session? Its events, workspace and blobs are removed for good.",
  },
  archive: {
    method: "POST",
    path: (id) => `/v1/sessions/${encodeURIComponent(id)}/archive`,
    question: "Archive this session? It leaves the fleet and can be restored later.",
  },
};

/** Delete and Archive; once done, back to the sessions list. */
export function LifecycleButtons({ sessionId }: { sessionId: string }) {
  const [note, setNote] = useState("");
  const run = async (op: Op) => {
    const request = REQUEST[op];
    if (!confirm(request.question)) return;
    setNote(`${op === "delete" ? "deleting" : "archiving"}…`);
    const r = await api<unknown>(request.method, request.path(sessionId));
    if (r.ok && r.status === 200) navigate("/");
    else if (r.ok) setNote(`${op} goes on in the background`);
    else setNote(`${op} refused: ${r.message}`);
  };
  return (
    <span class="actions lifecycle">
      <button type="button" data-testid="archive-session" onClick={() => run("archive")}>
        Archive
      </button>
      <button type="button" data-testid="delete-session" class="danger" onClick={() => run("delete")}>
        Delete
      </button>
      {note && (
        <span class="note" data-testid="lifecycle-note">
          {note}
        </span>
      )}
    </span>
  );
}

/** Restore a session that is not there from its archive (a missing archive is said so). */
export function RestoreButton({ sessionId, onRestored }: { sessionId: string; onRestored: () => void }) {
  const [note, setNote] = useState("");
  const restore = async () => {
    setNote("restoring…");
    const r = await api<unknown>("POST", "/v1/sessions", { restoreFrom: sessionId });
    if (r.ok) onRestored();
    else setNote(`restore failed: ${r.message}`);
  };
  return (
    <span class="actions">
      <button type="button" data-testid="restore-session" onClick={restore}>
        Restore from archive
      </button>
      {note && (
        <span class="note" data-testid="restore-note">
          {note}
        </span>
      )}
    </span>
  );
}
