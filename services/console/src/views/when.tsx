// A time as people read it: relative ("5 min ago"), the absolute local time on hover.
import { useEffect, useState } from "preact/hooks";
import { formatAbsolute, formatRelative } from "../format-time.js";

const TICK_MS = 10_000;

/** `ts`: epoch ms. The relative text follows the clock (re-rendered every 10 s). */
export function When({ ts, testId }: { ts: number; testId?: string }) {
  const [, setTick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setTick((n) => n + 1), TICK_MS);
    return () => clearInterval(timer);
  }, []);
  const absolute = formatAbsolute(ts, -new Date(ts).getTimezoneOffset());
  return (
    <time dateTime={new Date(ts).toISOString()} title={absolute} data-testid={testId} data-ts={ts}>
      {formatRelative(ts, Date.now())}
    </time>
  );
}
