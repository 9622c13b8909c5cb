// Host processes found by their command line, for tests that check that nothing a tool started
// survives (pid files written inside the sandbox hold PID-namespace pids, not host pids).
import { readdirSync, readFileSync } from "node:fs";

/**
 * Host pids of live (non-zombie) processes whose command line (arguments joined by spaces)
 * contains `pattern`, or matches it when it is a RegExp.
 */
export function processesMatching(pattern: string | RegExp): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf-8").replaceAll("\0", " ").trimEnd();
      if (typeof pattern === "string" ? !cmdline.includes(pattern) : !pattern.test(cmdline)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, "utf-8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state !== "Z" && state !== "X") pids.push(pid);
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}
