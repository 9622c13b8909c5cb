// Drives an interactive program under tmux: send-keys in, capture-pane out.
import { execFileSync, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FROM_SOURCE } from "../../support/node-entry.js";
import { FLEET_BIN } from "./run-cli.js";

export const HAS_TMUX = spawnSync("tmux", ["-V"]).status === 0;

export interface TmuxPane {
  send(...keys: string[]): void;
  /** The whole pane with its history, wrapped lines joined. */
  screen(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  alive(): boolean;
  /** Waits up to `timeoutMs` for the program to exit; returns whether it did. */
  waitForExit(timeoutMs?: number): Promise<boolean>;
  kill(): void;
}

/** Starts `fleet chat [args]` in a detached 200x50 tmux session with the given environment. */
export function startFleetInTmux(dir: string, args: string[], env: Record<string, string>): TmuxPane {
  const name = `fleet-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const launcher = join(dir, `${name}.sh`);
  const exports = Object.entries({ FLEET_FROM_SOURCE: FROM_SOURCE ? "1" : "0", NO_COLOR: "1", ...env })
    .map(([k, v]) => `export ${k}='${v}'`)
    .join("\n");
  writeFileSync(
    launcher,
    `#!/bin/sh\ncd '${dir}'\nunset NATS_URL REDIS_URL\n${exports}\nexec '${process.execPath}' '${FLEET_BIN}' ${args.map((a) => `'${a}'`).join(" ")}\n`,
    { mode: 0o755 },
  );
  const tmux = (...a: string[]) => execFileSync("tmux", a, { encoding: "utf8" });
  tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "50", launcher);
  const alive = () => spawnSync("tmux", ["has-session", "-t", name]).status === 0;
  const screen = () => tmux("capture-pane", "-p", "-J", "-t", name, "-S", "-2000");
  return {
    send: (...keys) => {
      tmux("send-keys", "-t", name, ...keys);
    },
    screen,
    alive,
    waitFor: async (pattern, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const text = alive() ? screen() : "";
        if (pattern.test(text)) return text;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}; screen:\n${text}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    waitForExit: async (timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      return !alive();
    },
    kill: () => {
      if (alive()) tmux("kill-session", "-t", name);
    },
  };
}
