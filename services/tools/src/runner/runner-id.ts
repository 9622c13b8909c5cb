import { randomBytes } from "node:crypto";
import { hostname } from "node:os";

/** A runner id unique per process: `tools-<host>-<pid>-<random>`. */
export function defaultRunnerId(): string {
  const host = hostname()
    .replace(/[^A-Za-z0-9_-]/g, "-")
    .slice(0, 40);
  return `tools-${host}-${process.pid}-${randomBytes(3).toString("hex")}`;
}

/** Returns `runnerId` when it is a valid runner id (1–128 of `[A-Za-z0-9_-]`, a KV key token); throws otherwise. */
export function checkRunnerId(runnerId: string): string {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(runnerId)) throw new Error(`invalid runnerId ${JSON.stringify(runnerId)}`);
  return runnerId;
}
