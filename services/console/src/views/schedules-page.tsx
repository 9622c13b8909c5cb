// The tenant's schedules: state, next fires, counts, and each one's history of slot outcomes (why a
// slot did not fire); pause, resume and trigger.
import { describeScheduleEvent, type ScheduleEvent, type ScheduleView } from "@fleet/protocol";
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { linkTo } from "../router.js";

type HistoryItem = { seq: number; event: ScheduleEvent };

const local = (ms: number) => new Date(ms).toLocaleString();

function specText(v: ScheduleView): string {
  const s = v.definition.spec;
  if (s.kind === "cron") return `cron ${s.cron} (${s.timezone ?? "UTC"})`;
  if (s.kind === "every") return `every ${s.everyMs / 1000} s`;
  return `once at ${local(s.at)}`;
}

export function SchedulesPage() {
  const [schedules, setSchedules] = useState<ScheduleView[] | null>(null);
  const [error, setError] = useState("");
  const [version, setVersion] = useState(0);
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      const r = await api<{ schedules: ScheduleView[] }>("GET", "/v1/schedules");
      if (stopped) return;
      if (!r.ok) return setError(r.message);
      setSchedules(r.body.schedules);
      setError("");
    };
    void load();
    const timer = setInterval(load, 2_000);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [version]);
  const act = async (id: string, action: "pause" | "resume" | "trigger") => {
    const r = await api("POST", `/v1/schedules/${id}/${action}`, action === "pause" ? {} : undefined);
    if (!r.ok) setError(r.message);
    setVersion((v) => v + 1);
  };
  return (
    <div class="schedules">
      <h2>Schedules</h2>
      {error && <div class="error-text">{error}</div>}
      {schedules?.length === 0 && <div class="muted">no schedules (create one with `fleet schedule create`)</div>}
      {schedules?.map((s) => (
        <div
          key={s.scheduleId}
          class="card schedule"
          data-testid="schedule"
          data-state={s.paused ? "paused" : "active"}
        >
          <div>
            <span class={`badge ${s.paused ? "disabled" : "active"}`}>{s.paused ? "paused" : "active"}</span>{" "}
            <code>{s.scheduleId}</code> <span class="muted">{specText(s)}</span> →{" "}
            {s.definition.target.kind === "session" ? (
              <a
                href={`/sessions/${s.definition.target.sessionId}`}
                onClick={linkTo(`/sessions/${s.definition.target.sessionId}`)}
              >
                {s.definition.target.sessionId}
              </a>
            ) : (
              <span>a new session per fire</span>
            )}{" "}
            <span class="muted">overlap {s.definition.overlap}</span>{" "}
            <button
              type="button"
              data-testid="schedule-toggle"
              onClick={() => act(s.scheduleId, s.paused ? "resume" : "pause")}
            >
              {s.paused ? "resume" : "pause"}
            </button>{" "}
            <button type="button" data-testid="schedule-trigger" onClick={() => act(s.scheduleId, "trigger")}>
              fire now
            </button>
          </div>
          {s.pauseNote && <div class="small">note: {s.pauseNote}</div>}
          <div class="small" data-testid="schedule-counts">
            {s.counts.fired} fired · {s.counts.skipped} skipped · {s.counts.missed} missed · {s.counts.failed} failed ·{" "}
            {s.counts.buffered} buffered
            {s.lastFire && (
              <>
                {" "}
                · last fire {local(s.lastFire.slot.at)} →{" "}
                <a href={`/sessions/${s.lastFire.sessionId}`} onClick={linkTo(`/sessions/${s.lastFire.sessionId}`)}>
                  {s.lastFire.sessionId}
                </a>
              </>
            )}
          </div>
          <div class="small" data-testid="schedule-next">
            next: {s.nextFires.length === 0 ? "none" : s.nextFires.map(local).join(" · ")}
          </div>
          <History scheduleId={s.scheduleId} version={`${JSON.stringify(s.counts)}/${s.paused}/${s.pendingTriggers}`} />
        </div>
      ))}
    </div>
  );
}

/** `version` changes whenever the schedule's state does: the open history is read again. */
function History({ scheduleId, version }: { scheduleId: string; version: string }) {
  const [items, setItems] = useState<HistoryItem[] | null>(null);
  const [open, setOpen] = useState(false);
  const key = version;
  useEffect(() => {
    if (!open) return;
    let stopped = false;
    void api<{ items: HistoryItem[] }>("GET", `/v1/schedules/${scheduleId}/history?limit=50`).then((r) => {
      if (!stopped && r.ok) setItems(r.body.items);
    });
    return () => {
      stopped = true;
    };
  }, [open, key, scheduleId]);
  return (
    <details onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>history</summary>
      <ul class="small" data-testid="schedule-history">
        {items?.map((i) => (
          <li key={i.seq} data-type={i.event.type}>
            {describeScheduleEvent(i.event)}
          </li>
        ))}
      </ul>
    </details>
  );
}
