// The session tree as a graph: one lane per branch (a fork opens a lane, drawn as a curve from the
// entry it forks at), node shapes by kind (user, assistant, tool result, compaction, summary), label
// tags, the leaf, the active branch drawn bold and what its compaction summarized dimmed. Clicking an
// entry shows the context at it, and lets one move the leaf, label it, or fork from it.
import { buildContext, type SessionEntry, type SessionTree } from "@fleet/protocol";
import { useMemo, useState } from "preact/hooks";
import { api, command } from "../api.js";
import { navigate } from "../router.js";
import { Transcript } from "./transcript.js";
import { describeEntry, layoutTree, treeFacts } from "./tree-layout.js";

const ROW = 26;
const LANE = 18;
const MAX_ROWS = 400;
const LANE_COLORS = 6;
/** Approximate width of a character of a label tag (11 px font). */
const TAG_CHAR = 6.6;

export function TreeView({ sessionId, tree, version }: { sessionId: string; tree: SessionTree; version: number }) {
  const { rows, lanes } = useMemo(() => layoutTree(tree), [tree, version]);
  const facts = useMemo(() => treeFacts(tree), [tree, version]);
  const [selected, setSelected] = useState<string | null>(null);
  const shown = rows.length > MAX_ROWS ? rows.slice(rows.length - MAX_ROWS) : rows;
  const first = shown[0]?.row ?? 0;
  const width = lanes * LANE + 12;
  const xOf = (lane: number) => lane * LANE + 10;
  const yOf = (row: number) => (row - first) * ROW + ROW / 2;
  const labels = Object.keys(tree.labels).length;
  const compactions = tree.entries.filter((e) => e.type === "compaction").length;
  return (
    <div class="tree-pane">
      <div class="tree" data-testid="tree">
        <div class="tree-summary muted small" data-testid="tree-summary">
          {tree.entries.length} entries · {facts.tips} {facts.tips === 1 ? "branch" : "branches"} · {labels}{" "}
          {labels === 1 ? "label" : "labels"} · {compactions} {compactions === 1 ? "compaction" : "compactions"}
        </div>
        <div class="tree-legend small muted">
          <span class="key key-user">user</span>
          <span class="key key-assistant">assistant</span>
          <span class="key key-tool">tool result</span>
          <span class="key key-compaction">compaction / summary</span>
          <span class="key key-path">active branch</span>
        </div>
        {rows.length > shown.length && <div class="muted">{rows.length - shown.length} earlier entries not drawn</div>}
        <svg width={width + 560} height={shown.length * ROW + 4} role="img" aria-label="session tree">
          {shown.map((r) => {
            if (!r.parent) return null;
            const on = facts.onPath.has(r.entry.id);
            const color = `lane-${r.lane % LANE_COLORS}`;
            const [px, py, x, y] = [xOf(r.parent.lane), yOf(r.parent.row), xOf(r.lane), yOf(r.row)];
            // Same lane: straight down; a fork: a curve out of the parent into the new lane, then down.
            const d =
              r.parent.lane === r.lane
                ? `M${px},${py} L${x},${y}`
                : `M${px},${py} C${px},${py + ROW * 0.7} ${x},${py + ROW * 0.2} ${x},${py + ROW * 0.9} L${x},${y}`;
            return (
              <path
                key={`edge-${r.entry.id}`}
                d={d}
                class={`edge ${color}${on ? " on-path" : ""}${facts.compacted.has(r.entry.id) ? " compacted" : ""}`}
                data-testid="tree-edge"
                data-fork={String(r.parent.lane !== r.lane)}
              />
            );
          })}
          {shown.map((r) => {
            const y = yOf(r.row);
            const x = xOf(r.lane);
            const label = Object.hasOwn(tree.labels, r.entry.id) ? tree.labels[r.entry.id] : undefined;
            const isLeaf = tree.leafId === r.entry.id;
            const kind = r.entry.type === "message" ? r.entry.message.role : r.entry.type;
            const on = facts.onPath.has(r.entry.id);
            const compacted = facts.compacted.has(r.entry.id);
            const fork = facts.forks.get(r.entry.id);
            const tagWidth = label ? label.length * TAG_CHAR + 12 : 0;
            return (
              // biome-ignore lint/a11y/noStaticElementInteractions: an SVG row; the buttons beside it act too
              <g
                key={r.entry.id}
                class={`node ${kind} lane-${r.lane % LANE_COLORS}${on ? " on-path" : " off-path"}${compacted ? " compacted" : ""}${selected === r.entry.id ? " selected" : ""}`}
                data-entry-id={r.entry.id}
                data-testid="tree-entry"
                data-lane={r.lane}
                data-kind={kind}
                data-on-path={String(on)}
                data-compacted={String(compacted)}
                onClick={() => setSelected(r.entry.id)}
              >
                <title>{`${kind} ${r.entry.id}\n${new Date(r.entry.timestamp).toISOString()}${fork ? `\nfork: ${fork} branches` : ""}${compacted ? "\nsummarized by the latest compaction" : ""}`}</title>
                {isLeaf && <circle cx={x} cy={y} r={10} class="leaf-ring" />}
                <NodeShape entry={r.entry} x={x} y={y} />
                {label && (
                  <rect x={width} y={y - 8} width={tagWidth} height={16} rx={8} class="tag" data-testid="tree-label" />
                )}
                <text x={width + 6} y={y + 4}>
                  {label && <tspan class="tag-text">{label}</tspan>}
                  <tspan x={width + 6 + (label ? tagWidth + 2 : 0)}>
                    {isLeaf && <tspan class="leaf-text">◀ leaf </tspan>}
                    <tspan class="desc">{describeEntry(r.entry)}</tspan>
                    {fork && <tspan class="fork-text">{` · forks into ${fork} branches`}</tspan>}
                  </tspan>
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

/** user: a filled dot; assistant: a ring; tool result: a square; compaction and summaries: a diamond. */
function NodeShape({ entry, x, y }: { entry: SessionEntry; x: number; y: number }) {
  if (entry.type === "compaction" || entry.type === "branch_summary")
    return <path d={`M${x},${y - 8} L${x + 8},${y} L${x},${y + 8} L${x - 8},${y} Z`} class="shape diamond" />;
  if (entry.type !== "message") return <circle cx={x} cy={y} r={3.5} class="shape meta" />;
  if (entry.message.role === "toolResult")
    return <rect x={x - 4.5} y={y - 4.5} width={9} height={9} rx={1.5} class="shape square" />;
  return <circle cx={x} cy={y} r={6} class={`shape ${entry.message.role === "user" ? "dot" : "ring"}`} />;
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
