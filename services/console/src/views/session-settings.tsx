// A session's settings as commands: model, thinking level, automatic compaction (and compact now),
// and export as a pi v3 JSONL file. Each control sends one command and shows its outcome; the values
// shown are the folded log's, so they change once the command's event is on the log.
import {
  type AgentStatus,
  type CompactionSettings,
  compactionSettingsOf,
  type SessionConfig,
  ThinkingLevel,
} from "@fleet/protocol";
import { useState } from "preact/hooks";
import { apiBytes, command } from "../api.js";
import { NumberField } from "./number-field.js";

export function SessionSettings({
  sessionId,
  status,
  config,
  live,
}: {
  sessionId: string;
  status: AgentStatus;
  config: SessionConfig | null;
  /** False while replaying an earlier event: the controls act on the session as it is now. */
  live: boolean;
}) {
  const [note, setNote] = useState("");
  const send = async (body: Record<string, unknown>, done: string) => {
    const r = await command(sessionId, body);
    setNote(r.ok ? done : `${String(body.type)} failed: ${r.message}`);
  };
  const model = status.model;
  const compaction = compactionSettingsOf(config);
  return (
    <div class="settings" data-testid="settings">
      {!live && <div class="notice">replaying an earlier event: these are the settings as they stood then</div>}
      <fieldset disabled={!live}>
        <legend>Model</legend>
        <ModelForm
          key={model ? `${model.provider}/${model.modelId}` : ""}
          provider={model?.provider ?? ""}
          modelId={model?.modelId ?? ""}
          onSet={(provider, modelId) => send({ type: "set_model", provider, modelId }, "model set")}
        />
      </fieldset>
      <fieldset disabled={!live}>
        <legend>Thinking level</legend>
        <select
          data-testid="thinking-level"
          value={status.thinkingLevel}
          onChange={(e) =>
            send({ type: "set_thinking_level", level: (e.target as HTMLSelectElement).value }, "thinking level set")
          }
        >
          {ThinkingLevel.options.map((level) => (
            <option key={level} value={level}>
              {level}
            </option>
          ))}
        </select>
      </fieldset>
      <fieldset disabled={!live}>
        <legend>Compaction</legend>
        <CompactionForm
          key={JSON.stringify(compaction)}
          current={compaction}
          onSave={(settings) => send({ type: "set_compaction_settings", ...settings }, "compaction settings saved")}
        />
        <button type="button" data-testid="compact-now" onClick={() => send({ type: "compact" }, "compaction asked")}>
          Compact now
        </button>
      </fieldset>
      <fieldset>
        <legend>Export</legend>
        <ExportButton sessionId={sessionId} onDone={setNote} />
      </fieldset>
      {note && (
        <div class="note" data-testid="settings-note">
          {note}
        </div>
      )}
    </div>
  );
}

function ModelForm(props: { provider: string; modelId: string; onSet(provider: string, modelId: string): void }) {
  const [provider, setProvider] = useState(props.provider);
  const [modelId, setModelId] = useState(props.modelId);
  return (
    <form
      class="actions"
      onSubmit={(e) => {
        e.preventDefault();
        if (provider.trim() && modelId.trim()) props.onSet(provider.trim(), modelId.trim());
      }}
    >
      <span class="muted" data-testid="current-model">
        now {props.provider ? `${props.provider}/${props.modelId}` : "none"}
      </span>
      <input
        data-testid="model-provider"
        aria-label="provider"
        placeholder="provider"
        value={provider}
        onInput={(e) => setProvider((e.target as HTMLInputElement).value)}
      />
      <input
        data-testid="model-id"
        aria-label="model id"
        placeholder="model id"
        value={modelId}
        onInput={(e) => setModelId((e.target as HTMLInputElement).value)}
      />
      <button type="submit" data-testid="set-model" disabled={!provider.trim() || !modelId.trim()}>
        Set model
      </button>
    </form>
  );
}

function CompactionForm(props: { current: CompactionSettings; onSave(settings: CompactionSettings): void }) {
  const [enabled, setEnabled] = useState(props.current.enabled);
  const [reserve, setReserve] = useState(String(props.current.reserveTokens));
  const [keep, setKeep] = useState(String(props.current.keepRecentTokens));
  const valid = [reserve, keep].every((v) => /^\d+$/.test(v.trim()));
  return (
    <form
      class="actions"
      data-testid="compaction-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (valid) props.onSave({ enabled, reserveTokens: Number(reserve), keepRecentTokens: Number(keep) });
      }}
    >
      <label>
        <input
          type="checkbox"
          data-testid="compaction-enabled"
          checked={enabled}
          onChange={(e) => setEnabled((e.target as HTMLInputElement).checked)}
        />{" "}
        automatic
      </label>
      <NumberField label="reserve tokens" testId="compaction-reserve" value={reserve} onChange={setReserve} />
      <NumberField label="keep recent tokens" testId="compaction-keep" value={keep} onChange={setKeep} />
      <button type="submit" data-testid="save-compaction" disabled={!valid}>
        Save
      </button>
      {!valid && <span class="error-text">token counts are whole numbers</span>}
    </form>
  );
}

/** Downloads `GET /v1/sessions/{id}/export` (the bearer token goes in a header, so not a plain link). */
function ExportButton({ sessionId, onDone }: { sessionId: string; onDone(note: string): void }) {
  return (
    <button
      type="button"
      data-testid="export"
      onClick={async () => {
        const r = await apiBytes(`/v1/sessions/${encodeURIComponent(sessionId)}/export`);
        if (!r.ok) return onDone(`export failed: ${r.message}`);
        const url = URL.createObjectURL(new Blob([r.body as Uint8Array<ArrayBuffer>], { type: "application/jsonl" }));
        const a = document.createElement("a");
        a.href = url;
        a.download = `${sessionId}.jsonl`;
        a.click();
        setTimeout(() => URL.revokeObjectURL(url), 10_000);
        onDone(`exported ${r.body.byteLength} bytes`);
      }}
    >
      Export (pi JSONL)
    </button>
  );
}
