import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { ProcessSandbox, SandboxedProcess } from "../sandbox/process-sandbox.js";

export interface SandboxStdioOptions {
  sandbox: ProcessSandbox;
  argv: readonly string[];
  /** The server's working directory: its only writable place. */
  workspace: string;
  env: Readonly<Record<string, string>>;
  network: boolean;
  readOnlyPaths: readonly string[];
  /** Each line the server writes to stderr (its log). */
  onStderr: (line: string) => void;
}

/**
 * MCP's stdio transport over a process started by the runner's sandbox (the SDK's own spawns
 * unconfined). `start` rejects when the sandbox refuses or the process cannot start; `onclose`
 * fires once, when the process exits or `close` is called. `close` ends every process of the server.
 */
export class SandboxStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private proc: SandboxedProcess | undefined;
  private readonly buffer = new ReadBuffer();
  private closed = false;

  private readonly opts: SandboxStdioOptions;

  constructor(opts: SandboxStdioOptions) {
    this.opts = opts;
  }

  /** The host pid of the process the sandbox started (bwrap, or the server when unconfined). */
  get pid(): number | undefined {
    return this.proc?.child.pid;
  }

  async start(): Promise<void> {
    const started = await this.opts.sandbox.start(this.opts.argv, {
      workspace: this.opts.workspace,
      env: this.opts.env,
      stdin: "pipe",
      ...(this.opts.network ? { network: "allow" as const } : {}),
      readOnlyPaths: this.opts.readOnlyPaths,
    });
    if (!started.ok) throw new Error(started.error);
    const proc = started.process;
    this.proc = proc;
    const { child } = proc;
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    child.on("error", (err) => this.onerror?.(err));
    child.stdout?.on("data", (chunk: Buffer) => {
      this.buffer.append(chunk);
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.buffer.readMessage();
        } catch (err) {
          this.onerror?.(err as Error);
          continue;
        }
        if (!message) break;
        this.onmessage?.(message);
      }
    });
    let pending = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      pending += chunk.toString("utf8");
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) this.opts.onStderr(line);
    });
    child.stdin?.on("error", (err) => this.onerror?.(err));
    child.once("close", () => {
      void proc.release();
      this.finish();
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.proc?.child.stdin;
    if (!stdin || this.closed) return Promise.reject(new Error("the server's process is not running"));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  async close(): Promise<void> {
    const proc = this.proc;
    proc?.child.stdin?.end();
    if (proc) await proc.kill(2_000);
    this.finish();
  }

  private finish() {
    if (this.closed) return;
    this.closed = true;
    this.buffer.clear();
    this.onclose?.();
  }
}
