// A one-shot RESP2 client over a raw TCP socket (enough for PING/SET/GET/INFO without ioredis).

import { connect } from "node:net";

/** A decoded RESP2 reply. Errors (`-ERR ...`) come back as `{ error }`, never as a rejection. */
export type RedisReply = string | number | null | { readonly error: string } | readonly RedisReply[];

/**
 * Opens a connection, sends one command, resolves with its decoded reply and closes the connection.
 * Rejects on connection failure or when no full reply arrives within `timeoutMs` (default 2000).
 */
export function sendRedisCommand(
  port: number,
  args: readonly string[],
  opts: { readonly host?: string; readonly timeoutMs?: number } = {},
): Promise<RedisReply> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: opts.host ?? "127.0.0.1", port });
    let buffer = Buffer.alloc(0);
    const timer = setTimeout(
      () => finish(new Error(`redis ${args[0]}: no reply after ${opts.timeoutMs ?? 2000} ms`)),
      opts.timeoutMs ?? 2000,
    );
    timer.unref();
    const finish = (result: Error | { reply: RedisReply }): void => {
      clearTimeout(timer);
      socket.destroy();
      if (result instanceof Error) reject(result);
      else resolve(result.reply);
    };
    socket.once("error", (error) => finish(error));
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      try {
        const parsed = parseReply(buffer, 0);
        if (parsed !== undefined) finish({ reply: parsed.value });
      } catch (error) {
        finish(error instanceof Error ? error : new Error(String(error)));
      }
    });
    socket.write(encodeCommand(args));
  });
}

/** RESP2 array-of-bulk-strings encoding of a command. */
export function encodeCommand(args: readonly string[]): Buffer {
  const parts = [`*${args.length}\r\n`];
  for (const arg of args) parts.push(`$${Buffer.byteLength(arg)}\r\n${arg}\r\n`);
  return Buffer.from(parts.join(""));
}

/** Parses one reply at `offset`; undefined when the buffer does not yet hold a complete reply. */
export function parseReply(buffer: Buffer, offset: number): { value: RedisReply; next: number } | undefined {
  const lineEnd = buffer.indexOf("\r\n", offset);
  if (lineEnd < 0) return undefined;
  const kind = String.fromCharCode(buffer[offset]!);
  const line = buffer.toString("utf8", offset + 1, lineEnd);
  const afterLine = lineEnd + 2;
  switch (kind) {
    case "+":
      return { value: line, next: afterLine };
    case "-":
      return { value: { error: line }, next: afterLine };
    case ":":
      return { value: Number(line), next: afterLine };
    case "$": {
      const length = Number(line);
      if (length < 0) return { value: null, next: afterLine };
      if (buffer.length < afterLine + length + 2) return undefined;
      return { value: buffer.toString("utf8", afterLine, afterLine + length), next: afterLine + length + 2 };
    }
    case "*": {
      const count = Number(line);
      if (count < 0) return { value: null, next: afterLine };
      const items: RedisReply[] = [];
      let next = afterLine;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buffer, next);
        if (item === undefined) return undefined;
        items.push(item.value);
        next = item.next;
      }
      return { value: items, next };
    }
    default:
      throw new Error(`RESP: unexpected reply type ${JSON.stringify(kind)}`);
  }
}
