// A minimal Redis probe over RESP (PING and INFO server), so `fleet doctor` needs no Redis client.
import { connect } from "node:net";

export type RedisProbe = { ok: true; version: string } | { ok: false; error: string };

/** Connects to `redis://[user:pass@]host:port`, authenticates when a password is given, PINGs and reads the version. */
export function probeRedis(url: string, timeoutMs = 2_000): Promise<RedisProbe> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return Promise.resolve({ ok: false, error: `invalid Redis URL ${url}` });
  }
  const host = parsed.hostname || "127.0.0.1";
  const port = Number(parsed.port || 6379);
  const commands: string[][] = [];
  if (parsed.password) {
    const user = decodeURIComponent(parsed.username);
    commands.push(
      user ? ["AUTH", user, decodeURIComponent(parsed.password)] : ["AUTH", decodeURIComponent(parsed.password)],
    );
  }
  commands.push(["PING"], ["INFO", "server"]);
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let buffer = "";
    const finish = (result: RedisProbe) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(
      () => finish({ ok: false, error: `no answer from ${host}:${port} within ${timeoutMs} ms` }),
      timeoutMs,
    );
    socket.on("error", (err: NodeJS.ErrnoException) => finish({ ok: false, error: err.code ?? err.message }));
    socket.on("connect", () => socket.write(commands.map(encode).join("")));
    socket.on("data", (chunk) => {
      buffer += chunk.toString("utf8");
      if (buffer.startsWith("-")) return finish({ ok: false, error: buffer.split("\r\n")[0]?.slice(1) ?? "error" });
      const version = /redis_version:([^\r\n]+)/.exec(buffer);
      if (buffer.includes("+PONG") && version) finish({ ok: true, version: version[1] as string });
    });
  });
}

function encode(args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`;
}
