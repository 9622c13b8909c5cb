// The process streams and environment a command runs with (injected so tests can drive commands).
import { colorFor, createStyle, type Style } from "./ansi.js";
import type { CliContext } from "./connect.js";

export interface CliIo extends CliContext {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
}

export function processIo(natsUrl?: string, authFlags?: CliContext["authFlags"]): CliIo {
  return {
    env: process.env,
    cwd: process.cwd(),
    natsUrl,
    authFlags,
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
  };
}

export const outStyle = (io: CliIo): Style => createStyle(colorFor(io.stdout, io.env));
export const errStyle = (io: CliIo): Style => createStyle(colorFor(io.stderr, io.env));

/** Resolves on the first SIGINT or SIGTERM; `count` tells how many arrived so far. */
export function onInterrupt(handler: (count: number, signal: NodeJS.Signals) => void): () => void {
  let count = 0;
  const listener = (signal: NodeJS.Signals) => handler(++count, signal);
  process.on("SIGINT", listener);
  process.on("SIGTERM", listener);
  return () => {
    process.off("SIGINT", listener);
    process.off("SIGTERM", listener);
  };
}
