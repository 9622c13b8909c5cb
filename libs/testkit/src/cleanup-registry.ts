// Module-level registry of every server and temp dir the testkit started, so nothing outlives the test process.

import { rmSync } from "node:fs";

/**
 * Something the testkit started and must tear down.
 * Contract: `killSync` must not throw and must not await (it runs inside `process.on("exit")`);
 * `stop` is the graceful path used by `stopAllServers`.
 */
export interface TrackedResource {
  readonly label: string;
  killSync(): void;
  stop(): Promise<void>;
}

const resources = new Set<TrackedResource>();
const tempDirs = new Set<string>();
let handlersInstalled = false;

/** Registers a resource; returns the function that unregisters it (call it once the resource is stopped). */
export function trackResource(resource: TrackedResource): () => void {
  installExitHandlers();
  resources.add(resource);
  return () => {
    resources.delete(resource);
  };
}

/** Registers a temp dir that is removed on process exit unless `untrackTempDir` ran first. */
export function trackTempDir(dir: string): void {
  installExitHandlers();
  tempDirs.add(dir);
}

/** Removes the dir now (never throws) and forgets it. */
export function removeTempDir(dir: string): void {
  tempDirs.delete(dir);
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** Labels of the resources still running (e.g. `nats-server pid 1234`); empty when every test cleaned up. */
export function listRunningServers(): string[] {
  return [...resources].map((r) => r.label);
}

/**
 * Gracefully stops every server still running (for a vitest globalSetup teardown or a final `afterAll`).
 * Contract: never rejects; a server that fails to stop gracefully is killed with SIGKILL.
 */
export async function stopAllServers(): Promise<void> {
  await Promise.all(
    [...resources].map(async (r) => {
      try {
        await r.stop();
      } catch {
        r.killSync();
      }
      resources.delete(r);
    }),
  );
}

function killAllSync(): void {
  for (const r of resources) {
    try {
      r.killSync();
    } catch {
      // best effort while exiting
    }
  }
  resources.clear();
  for (const dir of tempDirs) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort while exiting
    }
  }
  tempDirs.clear();
}

const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;

function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on("exit", killAllSync);
  for (const [signal, code] of Object.entries(SIGNAL_EXIT_CODES)) {
    const onSignal = (): void => {
      killAllSync();
      // Installing a listener disables Node's default "exit on signal"; restore it when nobody else handles it.
      if (process.listenerCount(signal) <= 1) process.exit(code);
    };
    process.on(signal, onSignal);
  }
}
