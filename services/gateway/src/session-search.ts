// `GET /v1/sessions?q=`: the store's list filtered by name or id, across all its pages.
import type { SessionSummary } from "@fleet/protocol";

export interface SessionPage {
  sessions: SessionSummary[];
  cursor?: string;
}

/** Store pages read per scan step. */
const SCAN_PAGE = 500;

/** Whether `q` (trimmed, case-insensitive) occurs in the session's name or id. */
export function matchesSession(session: SessionSummary, q: string): boolean {
  const needle = q.trim().toLowerCase();
  return (
    needle === "" ||
    session.sessionId.toLowerCase().includes(needle) ||
    (session.name ?? "").toLowerCase().includes(needle)
  );
}

/**
 * Scans the store's list (most recently updated first) from `cursor` and answers up to `limit`
 * matching sessions. The store has no name index, so at most `maxScanned` sessions are read per call;
 * when that budget runs out first, the page holds fewer than `limit` matches and its `cursor`
 * continues the scan. No `cursor` means the list has been read to its end.
 */
export async function searchSessions(
  listPage: (opts: { limit: number; cursor?: string }) => Promise<SessionPage>,
  q: string,
  opts: { limit: number; cursor?: string | undefined; maxScanned: number },
): Promise<SessionPage> {
  const found: SessionSummary[] = [];
  let cursor = opts.cursor;
  let scanned = 0;
  for (;;) {
    const from = cursor;
    const page = await listPage({ limit: SCAN_PAGE, ...(from !== undefined ? { cursor: from } : {}) });
    for (let i = 0; i < page.sessions.length; i++) {
      const session = page.sessions[i] as SessionSummary;
      if (!matchesSession(session, q)) continue;
      found.push(session);
      if (found.length < opts.limit) continue;
      if (i === page.sessions.length - 1) return withCursor(found, page.cursor);
      // The answer ends inside this page: the store's cursor right after row i is that of the
      // same page cut after it (cursors stay the store's own, opaque here).
      const cut = await listPage({ limit: i + 1, ...(from !== undefined ? { cursor: from } : {}) });
      return withCursor(found, cut.cursor);
    }
    scanned += page.sessions.length;
    cursor = page.cursor;
    if (cursor === undefined || scanned >= opts.maxScanned) return withCursor(found, cursor);
  }
}

const withCursor = (sessions: SessionSummary[], cursor: string | undefined): SessionPage =>
  cursor === undefined ? { sessions } : { sessions, cursor };
