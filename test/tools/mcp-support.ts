// Shared helpers of the MCP tests: the real servers from npm, started sandboxed or as HTTP processes.
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { getFreePort } from "@fleet/testkit";
import type { McpStdioServer } from "@fleet/tools";
import { captureOutput, REPO, until } from "./support.js";

export const NODE_MODULES = join(REPO, "node_modules");
export const EVERYTHING = join(NODE_MODULES, "@modelcontextprotocol/server-everything/dist/index.js");
export const FILESYSTEM = join(NODE_MODULES, "@modelcontextprotocol/server-filesystem/dist/index.js");

/** server-everything over stdio, run by the runner's sandbox (its code bound read-only). */
export const everythingStdio = (extra: Partial<McpStdioServer> = {}): McpStdioServer => ({
  command: process.execPath,
  args: [EVERYTHING, "stdio"],
  env: {},
  network: false,
  readOnlyPaths: [NODE_MODULES],
  ...extra,
});

export interface HttpServerProcess {
  url: string;
  port: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/**
 * server-everything over HTTP as a process on a free port: its streamable HTTP transport (`/mcp`),
 * or the older HTTP+SSE one (`/sse`).
 */
export async function startEverythingHttp(
  transport: "streamableHttp" | "sse" = "streamableHttp",
  /** Default a free port; the port of a server stopped before, to start it again. */
  fixedPort?: number,
): Promise<HttpServerProcess> {
  const port = fixedPort ?? (await getFreePort());
  const proc = spawn(process.execPath, [EVERYTHING, transport], {
    env: { PATH: process.env.PATH ?? "", PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = captureOutput(proc);
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  await until(
    () => /(listening|running) on port/.test(output()) || proc.exitCode !== null,
    20_000,
    "HTTP MCP server up",
  );
  if (proc.exitCode !== null) throw new Error(`HTTP MCP server exited:\n${output()}`);
  return {
    url: `http://127.0.0.1:${port}/${transport === "sse" ? "sse" : "mcp"}`,
    port,
    proc,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGTERM");
        const timer = setTimeout(() => proc.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}
