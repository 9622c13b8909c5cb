// The session tree as a picture: lanes for branches, the leaf, labels, compactions and summaries.
// Clicking an entry shows the context at it, and lets one move the leaf, label it, or fork from it.
import { buildContext, type SessionTree } from "@fleet/protocol";
import { useMemo, useState } from "preact/hooks";
import { api, command } from "../api.js";
import { navigate } from "../router.js";
import { Transcript } from "./transcript.js";
import { describeEntry, layoutTree } from "./tree-layout.js";

const ROW = 24;
const LANE = 16;
const MAX_ROWS = 400;

export function TreeView({ sessionId, tree, version }: { sessionId: string; tree: SessionTree; version: number }) {
  const { rows, lanes } = useMemo(() => layoutTree(tree), [tree, version]);
  const [selected, setSelected] = useState<string | null>(null);
  const shown = rows.length > MAX_ROWS ? rows.slice(rows.length - MAX_ROWS) : rows;
  const first = shown[0]?.row ?? 0;
  const width = lanes * LANE + 8;
  return (
    <div class="tree-pane">
      <div class="tree" data-testid="tree">
        {rows.length > shown.length && <div class="muted">{rows.length - shown.length} earlier entries not drawn</div>}
        <svg width={width + 520} height={shown.length * ROW + 4} role="img" aria-label="session tree">
          {shown.map((r) => {
            const y = (r.row - first) * ROW + ROW / 2;
            const x = r.lane * LANE + 10;
            const label = Object.hasOwn(tree.labels, r.entry.id) ? tree.labels[r.entry.id] : undefined;
            const isLeaf = tree.leafId === r.entry.id;
            const kind = r.entry.type === "message" ? r.entry.message.role : r.entry.type;
            return (
              // biome-ignore lint/a11y/noStaticElementInteractions: an SVG row; the buttons beside it act too
              <g
                key={r.entry.id}
                class={`node ${kind}${selected === r.entry.id ? " selected" : ""}`}
                data-entry-id={r.entry.id}
                data-testid="tree-entry"
                onClick={() => setSelected(r.entry.id)}
              >
                {r.parent && r.parent.row >= first && (
                  <path
                    d={`M${r.parent.lane * LANE + 10},${(r.parent.row - first) * ROW + ROW / 2} L${x},${y - ROW / 2} L${x},${y}`}
                    class="edge"
                  />
                )}
                <circle cx={x} cy={y} r={isLeaf ? 7 : 5} class={isLeaf ? "leaf" : ""} />
                <text x={width} y={y + 4}>
                  {isLeaf ? "◀ leaf  " : ""}
                  {label ? `[${label}] ` : ""}
                  {describeEntry(r.entry)}
                </text>
              </g>
            );
          })}
        </svg>
      </div>
      {selected && <EntryPanel sessionId={sessionId} tree={tree} entryId={selected} />}
    </div>
  );
}

function EntryPanel({ sessionId, tree, entryId }: { sessionId: string; tree: SessionTree; entryId: string }) {
  const [label, setLabel] = useState("");
  const [note, setNote] = useState("");
  const context = buildContext(tree, entryId);
  const act = async (p: Promise<{ ok: boolean; message?: string }>, done: string) => {
    const r = await p;
    setNote(r.ok ? done : `failed: ${r.message ?? ""}`);
  };
  return (
    <div class="entry-panel" data-testid="entry-panel">
      <h3>
        Context at <code>{entryId}</code>
      </h3>
      <div class="actions">
        <button
          type="button"
          data-testid="move-leaf"
          onClick={() => act(command(sessionId, { type: "navigate", targetId: entryId }), "leaf moved")}
        >
          Move leaf here
        </button>
        <input
          placeholder="label"
          data-testid="label-input"
          value={label}
          onInput={(e) => setLabel((e.target as HTMLInputElement).value)}
        />
        <button
          type="button"
          data-testid="label-entry"
          onClick={() =>
            act(command(sessionId, { type: "label", targetId: entryId, label: label || null }), "labelled")
          }
        >
          Label
        </button>
        <button
          type="button"
          data-testid="fork"
          onClick={async () => {
            const r = await api<{ sessionId: string }>("POST", "/v1/sessions", { forkFrom: { sessionId, entryId } });
            if (r.ok) navigate(`/sessions/${encodeURIComponent(r.body.sessionId)}`);
            else setNote(`fork failed: ${r.message}`);
          }}
        >
          Fork new session from here
        </button>
        {note && (
          <span class="note" data-testid="entry-note">
            {note}
          </span>
        )}
      </div>
      {context.ok ? <Transcript messages={context.messages} /> : <div class="error-text">{context.error}</div>}
    </div>
  );
}
