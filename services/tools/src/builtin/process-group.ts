// Signals a whole process group (a child spawned with `detached: true` leads its own group).
import { existsSync, readdirSync, readFileSync } from "node:fs";

const HAS_PROC = existsSync("/proc/self/stat");

/** `[state, pgrp]` of a process from /proc (Linux), or null when it is gone. */
function procStat(pid: number): [string, number] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf-8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return [fields[0] ?? "", Number(fields[2])];
  } catch {
    return null;
  }
}

const isZombie = (state: string) => state === "Z" || state === "X";

/** True while process `pid` exists and is not a zombie (an exited process waiting to be reaped counts as gone). */
export function isProcessAlive(pid: number): boolean {
  if (HAS_PROC) {
    const stat = procStat(pid);
    return stat !== null && !isZombie(stat[0]);
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * True while any process of group `pgid` is alive. Zombies do not count: an orphan killed here is
 * reaped by init, which may take a while.
 */
export function isGroupAlive(pgid: number): boolean {
  if (HAS_PROC) {
    for (const name of readdirSync("/proc")) {
      const pid = Number(name);
      if (!Number.isInteger(pid)) continue;
      const stat = procStat(pid);
      if (stat && stat[1] === pgid && !isZombie(stat[0])) return true;
    }
    return false;
  }
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // The group is already gone.
  }
}

/**
 * SIGTERM to the whole group, then SIGKILL to whatever of it is left after `graceMs`. Resolves once
 * the group is gone (or after SIGKILL plus a bounded wait). Never throws.
 */
export async function killProcessGroup(pgid: number, graceMs: number): Promise<void> {
  signalGroup(pgid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (isGroupAlive(pgid) && Date.now() < deadline) await sleep(10);
  if (!isGroupAlive(pgid)) return;
  signalGroup(pgid, "SIGKILL");
  const hardDeadline = Date.now() + 2_000;
  while (isGroupAlive(pgid) && Date.now() < hardDeadline) await sleep(10);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
