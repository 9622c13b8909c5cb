// HTTP/1.1 over a raw socket, for requests no HTTP client would send: any bytes, headers of a body
// that never comes, floods of connections.
import { connect, type Socket } from "node:net";

export interface RawAnswer {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from the request's last byte to the answer's. */
  ms: number;
  /** Did the server close the connection (within `closeWaitMs` after the answer)? */
  closed: boolean;
}

/**
 * Sends `request` as it is and reads one answer (with `Content-Length`, or up to the close).
 * `closeWaitMs`: how long to wait, after the answer, for the server to close the connection.
 */
export function rawRequest(
  port: number,
  request: string | Buffer,
  opts: { timeoutMs?: number; closeWaitMs?: number } = {},
): Promise<RawAnswer> {
  const { timeoutMs = 15_000, closeWaitMs = 0 } = opts;
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let data = Buffer.alloc(0);
    let sentAt = 0;
    let answer: Omit<RawAnswer, "closed"> | undefined;
    let ended = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(`no answer within ${timeoutMs} ms; got ${JSON.stringify(data.toString("latin1").slice(0, 300))}`),
      );
    }, timeoutMs);
    const finish = () => {
      if (!answer) return;
      clearTimeout(timer);
      const done = answer;
      const settle = () => {
        socket.destroy();
        resolve({ ...done, closed: ended });
      };
      if (ended || closeWaitMs === 0) settle();
      else {
        socket.once("end", settle);
        setTimeout(settle, closeWaitMs);
      }
    };
    const parse = (final: boolean) => {
      if (answer) return;
      const split = data.indexOf("\r\n\r\n");
      if (split === -1) return;
      const [statusLine, ...lines] = data.subarray(0, split).toString("latin1").split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const at = line.indexOf(":");
        headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
      }
      const body = data.subarray(split + 4);
      const length = headers["content-length"];
      const chunked = headers["transfer-encoding"] === "chunked";
      const complete =
        length !== undefined
          ? body.length >= Number(length)
          : final || (chunked && body.subarray(-5).toString("latin1") === "0\r\n\r\n");
      if (!complete) return;
      answer = {
        status: Number(statusLine?.split(" ")[1]),
        headers,
        body: body.subarray(0, length !== undefined ? Number(length) : body.length).toString("utf8"),
        ms: performance.now() - sentAt,
      };
    };
    socket.on("connect", () => {
      socket.write(request, () => {
        sentAt = performance.now();
      });
    });
    socket.on("data", (chunk) => {
      data = Buffer.concat([data, chunk]);
      parse(false);
      finish();
    });
    socket.on("end", () => {
      ended = true;
      parse(true);
      finish();
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      if (!answer) {
        parse(true);
        if (answer) finish();
        else {
          clearTimeout(timer);
          reject(new Error(`connection closed without an answer: ${JSON.stringify(data.toString("latin1"))}`));
        }
      }
    });
  });
}

/** A request's bytes: request line, headers (Host first unless given), and the body. */
export function httpRequest(
  method: string,
  path: string,
  opts: { host?: string; headers?: Record<string, string>; body?: string | Buffer; contentType?: string } = {},
): Buffer {
  const body = typeof opts.body === "string" ? Buffer.from(opts.body) : opts.body;
  const headers: Record<string, string> = {
    host: opts.host ?? "127.0.0.1",
    ...(body !== undefined
      ? { "content-type": opts.contentType ?? "application/json", "content-length": String(body.length) }
      : {}),
    ...opts.headers,
  };
  const head = `${method} ${path} HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("")}\r\n`;
  return body ? Buffer.concat([Buffer.from(head, "latin1"), body]) : Buffer.from(head, "latin1");
}

/**
 * Opens `count` SSE streams of `path` (at most `parallel` connecting at once); resolves once each
 * has received `mark`, rejects when one closes before.
 */
export async function openStreams(
  port: number,
  path: string,
  count: number,
  opts: { parallel?: number; mark?: string } = {},
): Promise<Socket[]> {
  const { parallel = 200, mark = "id: " } = opts;
  const sockets: Socket[] = [];
  await new Promise<void>((resolve, reject) => {
    let opened = 0;
    let ready = 0;
    const openOne = () => {
      if (opened >= count) return;
      opened++;
      const socket = connect({ host: "127.0.0.1", port }, () =>
        socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`),
      );
      sockets.push(socket);
      let seen = "";
      const onData = (chunk: Buffer) => {
        seen += chunk.toString("latin1");
        if (!seen.includes(mark)) return;
        socket.off("data", onData);
        ready++;
        if (ready === count) resolve();
        openOne();
      };
      socket.on("data", onData);
      socket.on("error", () => undefined);
      socket.on("close", () => {
        if (!seen.includes(mark))
          reject(
            new Error(
              `an SSE stream closed before ${JSON.stringify(mark)} (${ready} of ${count} ready, ${opened} opened, at ${new Date().toISOString()}): ${seen.slice(0, 400)}`,
            ),
          );
      });
    };
    for (let i = 0; i < Math.min(parallel, count); i++) openOne();
  });
  return sockets;
}
