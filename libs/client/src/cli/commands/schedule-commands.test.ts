import { describe, expect, it } from "vitest";
import { definitionOf, parseDuration, parseTime } from "./schedule-commands.js";

const NOW = Date.UTC(2026, 11, 4, 12);

describe("fleet schedule create / flags", () => {
  it("reads durations and times", () => {
    expect([parseDuration("250ms"), parseDuration("30s"), parseDuration("1.5m"), parseDuration("2h")]).toEqual([
      250, 30_000, 90_000, 7_200_000,
    ]);
    expect(() => parseDuration("soon")).toThrow("a duration like 30s, 5m, 1h or 250ms");
    expect(parseTime("+10m", NOW)).toBe(NOW + 600_000);
    expect(parseTime("2026-12-24T09:00:00+01:00", NOW)).toBe(Date.UTC(2026, 11, 24, 8));
    expect(() => parseTime("christmas", NOW)).toThrow("not a time: christmas");
  });

  it("builds the definition: cron in a zone into new sessions with create_session options", () => {
    expect(
      definitionOf(
        "standup",
        {
          cron: "0 9 * * 1-5",
          tz: "Europe/Berlin",
          prompt: "report",
          create: '{"config":{"thinkingLevel":"low"}}',
          overlap: "buffer_one",
          catchup: "5m",
          end: "+30d",
        },
        NOW,
      ),
    ).toEqual({
      scheduleId: "standup",
      spec: { kind: "cron", cron: "0 9 * * 1-5", timezone: "Europe/Berlin" },
      target: { kind: "new_session", prompt: "report", create: { config: { thinkingLevel: "low" } } },
      overlap: "buffer_one",
      catchupWindowMs: 300_000,
      endAt: NOW + 30 * 86_400_000,
    });
    expect(definitionOf("poll", { every: "15m", session: "s-1", prompt: "tickets?", paused: true }, NOW)).toEqual({
      scheduleId: "poll",
      spec: { kind: "every", everyMs: 900_000 },
      target: { kind: "session", sessionId: "s-1", prompt: "tickets?" },
      paused: true,
    });
  });

  it("refuses flags that do not make one schedule", () => {
    expect(() => definitionOf("x", { prompt: "p" }, NOW)).toThrow("give exactly one of --cron, --every and --at");
    expect(() => definitionOf("x", { every: "1m", tz: "UTC", prompt: "p" }, NOW)).toThrow("--tz goes with --cron");
    expect(() => definitionOf("x", { at: "+1m", session: "s", create: "{}", prompt: "p" }, NOW)).toThrow(
      "--create is for new sessions",
    );
  });
});
