// Import a pi v3 JSONL session file as a new session (`POST /v1/sessions/import`), then open it.
import { useState } from "preact/hooks";
import { apiText } from "../api.js";
import { navigate } from "../router.js";

export function SessionImport() {
  const [note, setNote] = useState("");
  return (
    <label class="import">
      <span>import a pi JSONL file</span>
      <input
        type="file"
        accept=".jsonl,application/jsonl,text/plain"
        data-testid="import-file"
        onChange={async (e) => {
          const input = e.target as HTMLInputElement;
          const file = input.files?.[0];
          if (!file) return;
          setNote(`importing ${file.name}…`);
          const r = await apiText<{ sessionId: string }>(
            "POST",
            "/v1/sessions/import",
            await file.text(),
            "application/jsonl",
          );
          input.value = "";
          if (r.ok) navigate(`/sessions/${encodeURIComponent(r.body.sessionId)}`);
          else setNote(`import failed: ${r.message}`);
        }}
      />
      {note && (
        <span class="note" data-testid="import-note">
          {note}
        </span>
      )}
    </label>
  );
}
