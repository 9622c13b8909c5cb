// The tenant's daily budget (`GET /v1/budget`): what its sessions spent today (UTC) against its
// limits, one meter per limit; set or remove the limits (`PUT`/`DELETE /v1/budget`, operate role).
import { type BudgetLimits, formatLimits, formatSpend, type Spend } from "@fleet/protocol";
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { NumberField } from "./number-field.js";

interface TenantBudgetAnswer {
  day: string;
  limits: BudgetLimits | null;
  total: Spend;
  sessions: ({ sessionId: string } & Spend)[];
}

const REFRESH_MS = 10_000;
const METERS = [
  ["costUsd", "cost", (n: number) => `$${n.toFixed(4)}`],
  ["totalTokens", "tokens", String],
  ["inputTokens", "input tokens", String],
  ["outputTokens", "output tokens", String],
] as const;

export function TenantBudget() {
  const [budget, setBudget] = useState<TenantBudgetAnswer | null>(null);
  const [error, setError] = useState("");
  const [editing, setEditing] = useState(false);
  const [reload, setReload] = useState(0);
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      const r = await api<TenantBudgetAnswer>("GET", "/v1/budget");
      if (stopped) return;
      if (r.ok) {
        setBudget(r.body);
        setError("");
      } else setError(r.message);
    };
    void load();
    const timer = setInterval(load, REFRESH_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [reload]);
  if (!budget)
    return error ? (
      <div class="budget error-text" data-testid="tenant-budget">
        daily budget: {error}
      </div>
    ) : null;
  const limits = budget.limits ?? {};
  const meters = METERS.filter(([key]) => limits[key] !== undefined);
  return (
    <div class="budget card" data-testid="tenant-budget">
      <div class="actions">
        <b>Today’s spend</b>
        <span class="muted">(UTC day {budget.day})</span>
        <span data-testid="tenant-spend">{formatSpend(budget.total)}</span>
        <span class="muted" data-testid="tenant-limits">
          daily limit: {formatLimits(budget.limits ?? undefined)}
        </span>
        <button type="button" data-testid="edit-budget" onClick={() => setEditing(!editing)}>
          {editing ? "Close" : "Set limits"}
        </button>
      </div>
      {meters.map(([key, label, show]) => {
        const limit = limits[key] as number;
        const used = budget.total[key];
        const share = limit > 0 ? used / limit : used > 0 ? 1 : 0;
        return (
          <div key={key} class="meter" data-testid={`budget-meter-${key}`} data-share={share.toFixed(4)}>
            <span class="meter-label">{label}</span>
            <svg width="100%" height="10" role="img" aria-label={`${label}: ${Math.round(share * 100)}% of the limit`}>
              <rect x="0" y="0" width="100%" height="10" rx="3" class="meter-back" />
              <rect
                x="0"
                y="0"
                width={`${Math.min(100, share * 100).toFixed(2)}%`}
                height="10"
                rx="3"
                class={`meter-fill${share >= 1 ? " over" : share >= 0.8 ? " near" : ""}`}
              />
            </svg>
            <span class="small">
              {show(used)} of {show(limit)} ({Math.round(share * 100)}%)
            </span>
          </div>
        );
      })}
      {editing && (
        <LimitsForm
          limits={budget.limits}
          onDone={() => {
            setEditing(false);
            setReload((n) => n + 1);
          }}
        />
      )}
    </div>
  );
}

function LimitsForm({ limits, onDone }: { limits: BudgetLimits | null; onDone(): void }) {
  const [cost, setCost] = useState(limits?.costUsd !== undefined ? String(limits.costUsd) : "");
  const [tokens, setTokens] = useState(limits?.totalTokens !== undefined ? String(limits.totalTokens) : "");
  const [note, setNote] = useState("");
  const costOk = cost.trim() === "" || (Number.isFinite(Number(cost)) && Number(cost) >= 0);
  const tokensOk = tokens.trim() === "" || /^\d+$/.test(tokens.trim());
  return (
    <form
      class="actions"
      data-testid="budget-form"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!costOk || !tokensOk) return;
        const body: BudgetLimits = {
          ...(limits ?? {}),
          ...(cost.trim() ? { costUsd: Number(cost) } : {}),
          ...(tokens.trim() ? { totalTokens: Number(tokens) } : {}),
        };
        if (!cost.trim()) delete body.costUsd;
        if (!tokens.trim()) delete body.totalTokens;
        const r = Object.keys(body).length ? await api("PUT", "/v1/budget", body) : await api("DELETE", "/v1/budget");
        if (r.ok) onDone();
        else setNote(`failed: ${r.message}`);
      }}
    >
      <NumberField label="$ per day" testId="budget-cost" value={cost} decimal onChange={setCost} />
      <NumberField label="tokens per day" testId="budget-tokens" value={tokens} onChange={setTokens} />
      <button type="submit" data-testid="save-budget" disabled={!costOk || !tokensOk}>
        Save (blank: no limit)
      </button>
      {!costOk && <span class="error-text">the cost is a number ≥ 0</span>}
      {!tokensOk && <span class="error-text">tokens are a whole number</span>}
      {note && <span class="note error-text">{note}</span>}
    </form>
  );
}
