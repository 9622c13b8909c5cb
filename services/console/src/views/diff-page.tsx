// Two sessions turn by turn (change 51): each turn's tokens, cost and latency side by side, then
// what differs (`diffSessionTurns` over both logs). Reloads every 2 s while either log grows.
import { diffSessionTurns, type FleetEvent, type SessionDiff, type SessionTurn, sessionTurns } from "@fleet/protocol";
import { useEffect, useState } from "preact/hooks";
import { linkTo } from "../router.js";
import { streamEvents } from "../sse.js";

async function readLog(sessionId: string, signal: AbortSignal): Promise<FleetEvent[] | string> {
  const events: FleetEvent[] = [];
  const end = await streamEvents(sessionId, {
    after: 0,
    follow: false,
    signal,
    onBatch: (items) => {
      for (const item of items) events.push(item.event);
    },
  });
  return end.ok ? events : `${sessionId}: ${end.message}`;
}

const side = (t: SessionTurn | undefined) =>
  t
    ? `${t.toolCalls.length} call(s) · in ${t.inputTokens} · out ${t.outputTokens} · $${t.costUsd.toFixed(4)} · ${(t.latencyMs / 1000).toFixed(2)} s`
    : "(no turn)";

export function DiffPage({ a, b }: { a: string; b: string }) {
  const [diff, setDiff] = useState<SessionDiff | undefined>();
  const [error, setError] = useState("");
  useEffect(() => {
    const abort = new AbortController();
    let sizes = "";
    const load = async () => {
      const [x, y] = await Promise.all([readLog(a, abort.signal), readLog(b, abort.signal)]);
      if (abort.signal.aborted) return;
      if (typeof x === "string" || typeof y === "string") {
        setError(typeof x === "string" ? x : (y as string));
        return;
      }
      const now = `${x.length}/${y.length}`;
      if (now !== sizes) setDiff(diffSessionTurns(sessionTurns(x), sessionTurns(y)));
      sizes = now;
      setTimeout(() => void load(), 2_000);
    };
    void load();
    return () => abort.abort();
  }, [a, b]);
  if (error) return <div class="notice">{error}</div>;
  if (!diff) return <div class="notice">loading…</div>;
  const turns = Math.max(diff.a.length, diff.b.length);
  return (
    <div class="diff" data-testid="diff-page">
      <h2>
        <a href={`/sessions/${a}`} onClick={linkTo(`/sessions/${a}`)}>
          {a}
        </a>{" "}
        vs{" "}
        <a href={`/sessions/${b}`} onClick={linkTo(`/sessions/${b}`)}>
          {b}
        </a>
      </h2>
      <table>
        <thead>
          <tr>
            <th>turn</th>
            <th>user</th>
            <th>a</th>
            <th>b</th>
          </tr>
        </thead>
        <tbody>
          {Array.from({ length: turns }, (_, i) => (
            <tr key={i} data-testid="diff-turn">
              <td>{i + 1}</td>
              <td>{(diff.a[i] ?? diff.b[i])?.user.slice(0, 80)}</td>
              <td>{side(diff.a[i])}</td>
              <td>{side(diff.b[i])}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {diff.differences.length === 0 ? (
        <p data-testid="diff-summary">
          Nothing differs: {turns} turn(s) with the same messages, tool calls, tokens and cost (latency not compared).
        </p>
      ) : (
        <>
          <p data-testid="diff-summary">
            {diff.differences.length} difference(s), {diff.divergedToolCalls} tool call(s) diverged.
          </p>
          <table>
            <tbody>
              {diff.differences.map((d) => (
                <tr key={`${d.turn}:${d.field}`} data-testid="diff-difference">
                  <td>
                    turn {d.turn + 1} {d.field}
                  </td>
                  <td>
                    <pre>{d.a}</pre>
                  </td>
                  <td>
                    <pre>{d.b}</pre>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}
