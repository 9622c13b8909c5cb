// Fleet health, what `fleet doctor` reads: partitions and owners, workers, runners and tools, lags, storage.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";

interface Report {
  partitions: number | null;
  protocol: number | null;
  streams: { name: string; exists: boolean; messages: number; drift: string[] }[];
  leases: { role: string; held: number; holders: Record<string, number[]>; unheld: number[] }[];
  workers: { loop: string[]; store: string[]; runners: string[] };
  tools: { name: string; runners: string[]; queued: number; running: number; consumer: boolean }[];
  storeLag: number | null;
  commandBacklog: number | null;
  storeConsumersMissing: number;
  storage: { usedBytes: number | null; limitBytes: number | null; full: boolean; probeError: string | null };
}

const mb = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MB`;

/** JetStream storage: full (writes refused, runs wait), or what the account uses of its limit. */
function StorageCard({ storage }: { storage: Report["storage"] }) {
  const used = storage.usedBytes === null ? "use unknown" : `${mb(storage.usedBytes)} used`;
  const of = storage.limitBytes === null ? "" : ` of ${mb(storage.limitBytes)}`;
  return (
    <div class={storage.full ? "card error-text" : "card"} data-testid="storage">
      storage <b>{storage.full ? "FULL" : "ok"}</b> · {used}
      {of}
      {storage.full && <div>JetStream refuses writes: commands answer storage_full and runs wait for space</div>}
      {storage.probeError && <div class="muted">probe: {storage.probeError}</div>}
    </div>
  );
}

export function HealthPage() {
  const [report, setReport] = useState<Report | null>(null);
  const [error, setError] = useState("");
  const [at, setAt] = useState("");
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      const r = await api<Report>("GET", "/v1/fleet/health");
      if (stopped) return;
      if (r.ok) {
        setReport(r.body);
        setError("");
        setAt(new Date().toLocaleTimeString());
      } else setError(r.message);
    };
    void load();
    const timer = setInterval(load, 2_000);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, []);
  if (!report) return <div class={error ? "error-text" : "muted"}>{error || "loading…"}</div>;
  return (
    <div class="health" data-testid="health">
      <h2>Fleet health</h2>
      <div class="muted">
        refreshed {at} (every 2 s){error && ` · last refresh failed: ${error}`}
      </div>
      <div class="cards">
        <div class="card">
          <b>{report.partitions ?? "?"}</b> partitions · protocol {report.protocol ?? "?"}
        </div>
        <div class="card" data-testid="store-lag">
          store lag <b>{report.storeLag ?? "no consumer"}</b> · command backlog <b>{report.commandBacklog ?? "—"}</b>
          {report.storeConsumersMissing > 0 && (
            <span class="error-text"> · {report.storeConsumersMissing} store consumers missing</span>
          )}
        </div>
        <StorageCard storage={report.storage} />
      </div>
      <h3>Partition owners</h3>
      {report.leases.map((l) => (
        <div key={l.role} class="card">
          <b>{l.role}</b>: {l.held} held
          {Object.entries(l.holders).map(([w, ps]) => (
            <div key={w}>
              <code>{w}</code>: {ps.join(", ")}
            </div>
          ))}
          {l.unheld.length > 0 && <div class="error-text">unowned: {l.unheld.join(", ")}</div>}
        </div>
      ))}
      <h3>Live workers</h3>
      <div class="card">
        loop: {report.workers.loop.join(", ") || "none"}
        <br />
        store: {report.workers.store.join(", ") || "none"}
        <br />
        tool runners: {report.workers.runners.join(", ") || "none"}
      </div>
      <h3>Tools</h3>
      <table>
        <thead>
          <tr>
            <th>tool</th>
            <th>runners</th>
            <th>queued</th>
            <th>running</th>
          </tr>
        </thead>
        <tbody>
          {report.tools.map((t) => (
            <tr key={t.name}>
              <td>{t.name}</td>
              <td>{t.runners.join(", ") || <span class="error-text">none</span>}</td>
              <td>{t.queued}</td>
              <td>{t.running}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Streams</h3>
      {report.streams.map((s) => (
        <div key={s.name} class={s.exists ? "" : "error-text"}>
          {s.name}: {s.exists ? `${s.messages} msgs` : "MISSING"}{" "}
          {s.drift.length > 0 && `(drift: ${s.drift.join("; ")})`}
        </div>
      ))}
    </div>
  );
}
