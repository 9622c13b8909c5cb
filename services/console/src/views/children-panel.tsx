// A session's child sessions (sub-agents, PROTOCOL "Sub-agents"): the tree of sessions its `agent`
// calls started, with live status and spend, and the approvals waiting inside them, decided here.
// Loaded from the gateway again whenever the parent's log grows (`version`), and every
// RELOAD_MS while a child runs or waits for a decision: a child's progress reaches its parent's log
// at most once per FLEET_SUBAGENT_PROGRESS_MS, and an approval asked inside a child not at all.
import { formatSpend, type Spend } from "@fleet/protocol";
import { useEffect, useRef, useState } from "preact/hooks";
import { api } from "../api.js";
import { linkTo } from "../router.js";
import { ApprovalButtons } from "./session-page.js";
import { show } from "./transcript.js";

interface Child {
  sessionId: string;
  toolCallId: string;
  agent?: string;
  description?: string;
  status: "pending" | "running" | "idle";
  spend: Spend;
  children?: Child[];
}

interface Approval {
  sessionId: string;
  toolCallId: string;
  toolName: string;
  args: unknown;
}

/** How often the tree is read again while anything in it runs. */
const RELOAD_MS = 2_000;

const anyRunning = (items: readonly Child[]): boolean =>
  items.some((c) => c.status !== "idle" || anyRunning(c.children ?? []));

export function ChildrenPanel({ sessionId, version }: { sessionId: string; version: number }) {
  const [children, setChildren] = useState<Child[] | null>(null);
  const [approvals, setApprovals] = useState<Approval[]>([]);
  const [error, setError] = useState("");
  const [tick, setTick] = useState(0);
  const loads = useRef(0);
  const busy = approvals.length > 0 || (children !== null && anyRunning(children));
  useEffect(() => {
    if (!busy) return;
    const timer = setInterval(() => setTick((t) => t + 1), RELOAD_MS);
    return () => clearInterval(timer);
  }, [busy]);
  useEffect(() => {
    const mine = ++loads.current;
    const id = encodeURIComponent(sessionId);
    void Promise.all([
      api<{ children: Child[] }>("GET", `/v1/sessions/${id}/children?depth=3`),
      api<{ approvals: Approval[] }>("GET", `/v1/approvals?sessionId=${id}&descendants=true`),
    ]).then(([tree, pending]) => {
      if (mine !== loads.current) return;
      if (tree.ok) setChildren(tree.body.children);
      if (pending.ok) setApprovals(pending.body.approvals.filter((a) => a.sessionId !== sessionId));
      setError(tree.ok ? (pending.ok ? "" : pending.message) : tree.message);
    });
  }, [sessionId, version, tick]);
  return (
    <div class="children" data-testid="children">
      {error && <div class="error-text">{error}</div>}
      {children?.length === 0 && <div class="muted">no child sessions</div>}
      {children && children.length > 0 && <ChildList items={children} />}
      {approvals.map((a) => (
        <div key={`${a.sessionId}/${a.toolCallId}`} class="approval" data-testid="child-approval">
          approval needed in child <code>{a.sessionId}</code>: <b>{a.toolName}</b> <code>{a.toolCallId}</code>
          <pre>{show(a.args)}</pre>
          <ApprovalButtons sessionId={a.sessionId} toolCallId={a.toolCallId} />
        </div>
      ))}
    </div>
  );
}

function ChildList({ items }: { items: readonly Child[] }) {
  return (
    <ul>
      {items.map((c) => (
        <li key={c.sessionId} data-testid="child-session" data-status={c.status}>
          <a href={`/sessions/${c.sessionId}`} onClick={linkTo(`/sessions/${encodeURIComponent(c.sessionId)}`)}>
            {c.sessionId}
          </a>{" "}
          <span class={c.status === "running" ? "running" : "muted"} data-testid="child-status">
            {c.status}
          </span>
          {(c.agent || c.description) && <span> {[c.agent, c.description].filter(Boolean).join(": ")}</span>}{" "}
          <span class="muted">{formatSpend(c.spend)}</span>
          {c.children && c.children.length > 0 && <ChildList items={c.children} />}
        </li>
      ))}
    </ul>
  );
}
