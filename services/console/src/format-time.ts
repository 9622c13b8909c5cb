// Times as people read them (pure: `now` and the time zone offset are inputs).

/** `just now`, `42 s ago`, `5 min ago`, `3 h ago`, `2 days ago`; a time ahead of `now` reads `just now`. */
export function formatRelative(ts: number, now: number): string {
  const s = Math.max(0, (now - ts) / 1000);
  if (s < 5) return "just now";
  if (s < 60) return `${Math.floor(s)} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  const days = Math.floor(s / 86_400);
  return days === 1 ? "1 day ago" : `${days} days ago`;
}

/**
 * `2026-12-04 19:03:12 UTC+01:00`: the local wall time at `offsetMinutes` east of UTC (the negation
 * of `Date#getTimezoneOffset`), with the offset spelled out.
 */
export function formatAbsolute(ts: number, offsetMinutes: number): string {
  const local = new Date(ts + offsetMinutes * 60_000).toISOString();
  const sign = offsetMinutes < 0 ? "-" : "+";
  const abs = Math.abs(offsetMinutes);
  const offset = `${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
  return `${local.slice(0, 10)} ${local.slice(11, 19)} UTC${offsetMinutes === 0 ? "" : `${sign}${offset}`}`;
}
