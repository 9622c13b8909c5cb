// One session: live transcript, queues, input box, replay slider, and the tree.
import {
  type AgentMessage,
  type ContextMessage,
  entryToContextMessage,
  formatLimits,
  formatSpend,
  getBranch,
  streamingMessageOf,
} from "@fleet/protocol";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { command } from "../api.js";
import { formatAbsolute } from "../format-time.js";
import type { Folded } from "../replay.js";
import { linkTo, navigate } from "../router.js";
import { RunIndex } from "../run-index.js";
import { useSessionLog } from "../use-session-log.js";
import { ChildrenPanel } from "./children-panel.js";
import { LifecycleButtons, RestoreButton } from "./lifecycle-buttons.js";
import { ReplayButton } from "./replay-button.js";
import { RunsView } from "./run-waterfall.js";
import { SessionSettings } from "./session-settings.js";
import { contentText, Transcript } from "./transcript.js";
import { TreeView } from "./tree-view.js";

type Tab = "transcript" | "tree" | "children" | "runs" | "settings";

/** `run`: the page is `/sessions/<id>/runs[/<run>]` (`""`: the latest run). */
export function SessionPage({ sessionId, run }: { sessionId: string; run?: string | undefined }) {
  const { log, status, version } = useSessionLog(sessionId);
  /** `null`: live (follows the end of the log); else the number of events folded. */
  const [at, setAt] = useState<number | null>(null);
  const [tab, setTab] = useState<Tab>(run === undefined ? "transcript" : "runs");
  const runIndex = useRef(new RunIndex());
  // The Runs tab is the `/runs` path: back and forward move between it and the other tabs.
  useEffect(() => {
    setTab((current) => (run !== undefined ? "runs" : current === "runs" ? "transcript" : current));
  }, [run]);
  const showTab = (next: Tab) => {
    setTab(next);
    if (next === "runs") navigate(`/sessions/${encodeURIComponent(sessionId)}/runs`);
    else if (run !== undefined) navigate(`/sessions/${encodeURIComponent(sessionId)}`);
  };
  const scrubbed = useRef<Folded | undefined>(undefined);
  const stepStarted = useRef(0);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.target as HTMLElement).closest("input, textarea")) return;
      if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
      e.preventDefault();
      stepStarted.current = performance.now();
      setAt((current) => {
        const n = current ?? log.length;
        return Math.max(0, Math.min(log.length, n + (e.key === "ArrowLeft" ? -1 : 1)));
      });
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [log]);

  useLayoutEffect(() => {
    if (stepStarted.current) {
      document.body.dataset.stepMs = (performance.now() - stepStarted.current).toFixed(2);
      stepStarted.current = 0;
    }
  });

  if (status.kind === "loading") return <div class="muted">loading session {sessionId}…</div>;
  if (status.kind === "missing")
    return (
      <div class="notice" data-testid="missing-session">
        <h2>No session “{sessionId}”</h2>
        <p>{status.message}. It may never have existed, the id is mistyped, or it was archived.</p>
        <p>
          <RestoreButton sessionId={sessionId} onRestored={() => location.reload()} />
        </p>
        <a href="/" onClick={linkTo("/")}>
          ← all sessions
        </a>
      </div>
    );
  if (status.kind === "error")
    return (
      <div class="notice error-text">
        could not load {sessionId}: {status.message}
      </div>
    );

  const live = at === null || at >= log.length;
  let state: Folded;
  if (live) state = log.latest();
  else {
    state = log.at(at, scrubbed.current);
    scrubbed.current = state;
  }
  const s = state.session;
  const streaming = streamingMessageOf(s);
  const approvals = [...s.approvals.entries()].filter(([id, a]) => !a.decision && s.status.pendingToolCalls.has(id));
  const current = live ? log.length : (at as number);
  const branch = getBranch(s.tree);
  const messages: ContextMessage[] = [];
  /** Message index → the run that starts with it. */
  const runLinks = new Map<number, string>();
  const runStarts = runIndex.current.update(log.events).firstEntries;
  if (branch.ok) {
    for (const entry of branch.entries) {
      const m = entryToContextMessage(entry);
      if (!m) continue;
      const runId = runStarts.get(entry.id);
      if (runId !== undefined) runLinks.set(messages.length, runId);
      messages.push(m);
    }
  }
  return (
    <div
      class="session"
      data-testid="session"
      data-open-ms={status.openMs.toFixed(1)}
      data-events={log.length}
      data-at={current}
    >
      <div class="session-head">
        <h2>{s.tree.name ?? sessionId}</h2>
        <span class={`badge ${s.status.isStreaming ? "running" : "idle"}`} data-testid="session-status">
          {approvals.length ? "awaiting approval" : s.status.isStreaming ? "running" : "idle"}
        </span>
        <span class="muted">
          {s.status.model ? `${s.status.model.provider}/${s.status.model.modelId}` : "no model"} · seq {state.seq}
          {s.tree.agent && (
            <span data-testid="session-agent">
              {" "}
              · agent {s.tree.agent.name}@{s.tree.agent.version}
            </span>
          )}
          {s.tree.forkedFrom && (
            <>
              {" "}
              · forked from{" "}
              <a
                href={`/sessions/${s.tree.forkedFrom.sessionId}`}
                onClick={linkTo(`/sessions/${s.tree.forkedFrom.sessionId}`)}
              >
                {s.tree.forkedFrom.sessionId}
              </a>
            </>
          )}
        </span>
        <span class="muted" data-testid="session-spend" title={`last run: ${formatSpend(s.spend.run)}`}>
          spent {formatSpend(s.spend.session)}
          {s.spend.budget.session && ` · budget ${formatLimits(s.spend.budget.session)}`}
          {s.spend.budget.run && ` · per run ${formatLimits(s.spend.budget.run)}`}
        </span>
        <ReplayButton sessionId={sessionId} />
        <LifecycleButtons sessionId={sessionId} />
      </div>
      <div class="slider">
        <input
          type="range"
          data-testid="slider"
          aria-label="replay position"
          min={0}
          max={log.length}
          value={current}
          onInput={(e) => {
            stepStarted.current = performance.now();
            setAt(Number((e.target as HTMLInputElement).value));
          }}
        />
        <span data-testid="slider-pos">
          event {current} / {log.length}
        </span>
        <span class="muted" data-testid="slider-time" title={state.ts === null ? "" : new Date(state.ts).toISOString()}>
          {state.ts === null ? "" : formatAbsolute(state.ts, -new Date(state.ts).getTimezoneOffset())}
        </span>
        <button type="button" data-testid="live" class={live ? "on" : ""} onClick={() => setAt(null)}>
          {live ? "● live" : "live"}
        </button>
      </div>
      <div class="tabs">
        <button type="button" class={tab === "transcript" ? "on" : ""} onClick={() => showTab("transcript")}>
          Transcript
        </button>
        <button type="button" data-testid="tree-tab" class={tab === "tree" ? "on" : ""} onClick={() => showTab("tree")}>
          Tree ({s.tree.entries.length})
        </button>
        <button
          type="button"
          data-testid="children-tab"
          class={tab === "children" ? "on" : ""}
          onClick={() => showTab("children")}
        >
          Children
        </button>
        <button type="button" data-testid="runs-tab" class={tab === "runs" ? "on" : ""} onClick={() => showTab("runs")}>
          Runs
        </button>
        <button
          type="button"
          data-testid="settings-tab"
          class={tab === "settings" ? "on" : ""}
          onClick={() => showTab("settings")}
        >
          Settings
        </button>
      </div>
      {tab === "runs" ? (
        <RunsView sessionId={sessionId} log={log.events} upTo={current} runId={run || undefined} />
      ) : tab === "children" ? (
        <ChildrenPanel sessionId={sessionId} version={version + log.length} />
      ) : tab === "settings" ? (
        <SessionSettings sessionId={sessionId} status={s.status} config={s.tree.config} live={live} />
      ) : tab === "transcript" ? (
        <>
          <Transcript
            messages={messages}
            streaming={streaming}
            running={state.progress}
            pending={s.status.pendingToolCalls}
            sessionId={sessionId}
            runLinks={runLinks}
          />
          {s.status.errorMessage && <div class="error-text">run error: {s.status.errorMessage}</div>}
          {approvals.map(([id, a]) => (
            <div key={id} class="approval" data-testid="approval">
              approval needed: <b>{a.toolName}</b> <code>{id}</code>
              <ApprovalButtons sessionId={sessionId} toolCallId={id} />
            </div>
          ))}
        </>
      ) : (
        <TreeView sessionId={sessionId} tree={s.tree} version={version + current} />
      )}
      <Queues queues={s.status.queues} />
      <InputBox sessionId={sessionId} running={s.status.isStreaming} />
    </div>
  );
}

function Queues({
  queues,
}: {
  queues: { steer: readonly AgentMessage[]; followUp: readonly AgentMessage[]; nextTurn: readonly AgentMessage[] };
}) {
  const rows = (["steer", "followUp", "nextTurn"] as const).filter((k) => queues[k].length > 0);
  if (!rows.length)
    return (
      <div class="queues muted" data-testid="queues">
        queues empty
      </div>
    );
  return (
    <div class="queues" data-testid="queues">
      {rows.map((k) => (
        <div key={k} data-testid={`queue-${k}`}>
          <b>{k}</b>:{" "}
          {queues[k].map((m, i) => (
            <span key={i} class="queued">
              {contentText(m.content)}
            </span>
          ))}
        </div>
      ))}
    </div>
  );
}

export function ApprovalButtons({ sessionId, toolCallId }: { sessionId: string; toolCallId: string }) {
  const [note, setNote] = useState("");
  const decide = async (type: "approve_tool_call" | "deny_tool_call") => {
    const r = await command(sessionId, { type, toolCallId });
    setNote(r.ok ? (type === "approve_tool_call" ? "approved" : "denied") : `failed: ${r.message}`);
  };
  return (
    <span class="actions">
      <button type="button" data-testid="approve" onClick={() => decide("approve_tool_call")}>
        Approve
      </button>
      <button type="button" data-testid="deny" onClick={() => decide("deny_tool_call")}>
        Deny
      </button>
      {note && <span class="note">{note}</span>}
    </span>
  );
}

function InputBox({ sessionId, running }: { sessionId: string; running: boolean }) {
  const [text, setText] = useState("");
  const [note, setNote] = useState("");
  const send = async (type: "prompt" | "steer" | "follow_up" | "abort") => {
    const sent = text;
    const r = await command(sessionId, type === "abort" ? { type } : { type, text: sent });
    // What was typed while the command was on its way stays.
    if (r.ok && type !== "abort") setText((current) => (current === sent ? "" : current));
    setNote(r.ok ? `${type} sent` : `${type} failed: ${r.message}`);
  };
  return (
    <form
      class="input-box"
      onSubmit={(e) => {
        e.preventDefault();
        if (text.trim()) void send(running ? "steer" : "prompt");
      }}
    >
      <textarea
        data-testid="input"
        placeholder={running ? "steer the running agent, or queue a follow-up" : "prompt"}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
      />
      <div class="actions">
        <button
          type="submit"
          data-testid="send-prompt"
          disabled={!text.trim()}
          onClick={(e) => {
            e.preventDefault();
            void send("prompt");
          }}
        >
          Prompt
        </button>
        <button type="button" data-testid="send-steer" disabled={!text.trim()} onClick={() => send("steer")}>
          Steer
        </button>
        <button type="button" data-testid="send-follow-up" disabled={!text.trim()} onClick={() => send("follow_up")}>
          Follow-up
        </button>
        <button type="button" data-testid="abort" onClick={() => send("abort")}>
          Abort
        </button>
        {note && (
          <span class="note" data-testid="input-note">
            {note}
          </span>
        )}
      </div>
    </form>
  );
}
