// "Replay with…": a replay of this session with another model and a tools mode (POST /v1/sessions
// {replayOf}); once accepted, the diff page of the source and the replay.
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { navigate } from "../router.js";

export function ReplayButton({ sessionId }: { sessionId: string }) {
  const [model, setModel] = useState("");
  const [toolsMode, setToolsMode] = useState<"recorded" | "live">("recorded");
  const [note, setNote] = useState("");
  const replay = async () => {
    const [provider, modelId] = model.includes("/") ? model.split("/", 2) : ["anthropic", model.trim()];
    const overrides = modelId ? { model: { provider, modelId } } : {};
    setNote("replaying…");
    const r = await api<{ sessionId: string }>("POST", "/v1/sessions", {
      replayOf: { sessionId, overrides, toolsMode },
    });
    if (r.ok) navigate(`/diff/${encodeURIComponent(sessionId)}/${encodeURIComponent(r.body.sessionId)}`);
    else setNote(`replay refused: ${r.message}`);
  };
  return (
    <span class="actions replay">
      <input
        data-testid="replay-model"
        placeholder="model (blank: same)"
        value={model}
        onInput={(e) => setModel((e.target as HTMLInputElement).value)}
      />
      <select
        data-testid="replay-tools-mode"
        value={toolsMode}
        onChange={(e) => setToolsMode((e.target as HTMLSelectElement).value as "recorded" | "live")}
      >
        <option value="recorded">recorded tools</option>
        <option value="live">live tools</option>
      </select>
      <button type="button" data-testid="replay-session" onClick={replay}>
        Replay with…
      </button>
      {note && (
        <span class="note" data-testid="replay-note">
          {note}
        </span>
      )}
    </span>
  );
}
