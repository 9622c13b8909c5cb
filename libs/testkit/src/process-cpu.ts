import { readFileSync } from "node:fs";

/**
 * CPU seconds (user + system) process `pid` has used so far, read from `/proc/<pid>/stat` (Linux;
 * clock ticks of 1/100 s). NaN where that is not available or the process is gone. For benchmarks.
 */
export function cpuSecondsOf(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}
