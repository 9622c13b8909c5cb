import { describe, expect, it } from "vitest";
import { formatAbsolute, formatRelative } from "./format-time.js";

describe("console / times", () => {
  const now = Date.UTC(2026, 11, 4, 19, 0, 0);
  it("reads a past time relative to now", () => {
    const ago = (ms: number) => formatRelative(now - ms, now);
    expect([
      ago(-5_000),
      ago(2_000),
      ago(42_000),
      ago(5 * 60_000 + 59_000),
      ago(3 * 3_600_000),
      ago(86_400_000),
      ago(3 * 86_400_000),
    ]).toEqual(["just now", "just now", "42 s ago", "5 min ago", "3 h ago", "1 day ago", "3 days ago"]);
  });
  it("spells an absolute time in the zone it is read in", () => {
    const ts = Date.UTC(2026, 11, 4, 18, 3, 12, 500);
    expect(formatAbsolute(ts, 0)).toBe("2026-12-04 18:03:12 UTC");
    expect(formatAbsolute(ts, 60)).toBe("2026-12-04 19:03:12 UTC+01:00");
    expect(formatAbsolute(ts, -330)).toBe("2026-12-04 12:33:12 UTC-05:30");
  });
});
