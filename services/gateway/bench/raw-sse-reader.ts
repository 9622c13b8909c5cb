// A minimal SSE reader over a raw TCP socket, for the bench's client processes: hundreds of streams
// per process on a shared CPU, so no node:http client, no string decoding and no frame objects.
import { connect, type Socket } from "node:net";

/** What the reader needs of one SSE frame: its `event:` type and its raw bytes (fields included). */
export type OnRawFrame = (event: string, frame: Buffer) => void;

const CRLF = Buffer.from("\r\n");
const HEAD_END = Buffer.from("\r\n\r\n");
const FRAME_END = Buffer.from("\n\n");
const EVENT_FIELD = Buffer.from("\nevent: ");

/**
 * An incremental decoder of one HTTP/1.1 SSE response (head, then a chunked or close-delimited
 * body): feed it the socket's bytes; it calls `onHead` once with the status and `onFrame` per
 * complete SSE frame. Frames and chunks may be split anywhere. Returns an error message when the
 * bytes are not such a response.
 */
export function rawSseDecoder(
  onHead: (status: number) => void,
  onFrame: OnRawFrame,
): (bytes: Buffer) => string | undefined {
  let pending: Buffer = Buffer.alloc(0);
  let inHead = true;
  let chunked = false;
  /** Bytes left in the current chunk; -1 while its size line is being read. */
  let chunkLeft = -1;
  let body: Buffer = Buffer.alloc(0);

  const frames = (bytes: Buffer) => {
    let data = body.length > 0 ? Buffer.concat([body, bytes]) : bytes;
    for (let end = data.indexOf(FRAME_END); end !== -1; end = data.indexOf(FRAME_END)) {
      const frame = data.subarray(0, end + 1);
      const field = frame.indexOf(EVENT_FIELD.subarray(1)) === 0 ? 0 : frame.indexOf(EVENT_FIELD) + 1;
      const at = field + EVENT_FIELD.length - 1;
      const event = field > 0 || frame[0] === 0x65 ? frame.toString("latin1", at, frame.indexOf(10, at)) : "";
      onFrame(event, frame);
      data = data.subarray(end + 2);
    }
    body = data.length > 0 ? Buffer.from(data) : Buffer.alloc(0);
  };

  return (bytes) => {
    let data = pending.length > 0 ? Buffer.concat([pending, bytes]) : bytes;
    pending = Buffer.alloc(0);
    if (inHead) {
      const end = data.indexOf(HEAD_END);
      if (end === -1) {
        pending = Buffer.from(data);
        return undefined;
      }
      const head = data.toString("latin1", 0, end);
      const status = Number(head.slice(9, 12));
      if (!head.startsWith("HTTP/1.1 ") || !Number.isInteger(status)) return "not an HTTP/1.1 response";
      chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head);
      inHead = false;
      onHead(status);
      data = data.subarray(end + HEAD_END.length);
    }
    if (!chunked) {
      frames(data);
      return undefined;
    }
    while (data.length > 0) {
      if (chunkLeft === -1) {
        const eol = data.indexOf(CRLF);
        if (eol === -1) break;
        chunkLeft = Number.parseInt(data.toString("latin1", 0, eol), 16);
        if (Number.isNaN(chunkLeft)) return "malformed chunk size";
        data = data.subarray(eol + 2);
      }
      // A chunk's data and its CRLF: the data may be split across reads, the CRLF is awaited whole.
      if (chunkLeft > 0) {
        const take = Math.min(chunkLeft, data.length);
        frames(data.subarray(0, take));
        chunkLeft -= take;
        data = data.subarray(take);
        if (chunkLeft > 0) break;
      }
      if (data.length < 2) break;
      chunkLeft = -1;
      data = data.subarray(2);
    }
    pending = data.length > 0 ? Buffer.from(data) : Buffer.alloc(0);
    return undefined;
  };
}

export interface RawSseStream {
  socket: Socket;
  close(): void;
}

/** One read buffer for every stream of the process: reads are handled synchronously, one at a time. */
const readBuffer = Buffer.allocUnsafe(64 * 1024);

/**
 * Opens `GET path` on `host:port` with `Accept: text/event-stream`; resolves once the response's
 * head arrived with status 200. `onBytes` runs at every read, before the frames it completes.
 * Reads go straight to the decoder (the socket's `onread`, no stream machinery, no allocation).
 */
export function openRawSse(
  host: string,
  port: number,
  path: string,
  onFrame: OnRawFrame,
  onBytes: () => void,
): Promise<RawSseStream> {
  return new Promise((resolve, reject) => {
    const decode = rawSseDecoder((status) => {
      if (status === 200) resolve({ socket, close: () => socket.destroy() });
      else reject(new Error(`HTTP ${status}`));
    }, onFrame);
    const socket = connect({
      host,
      port,
      noDelay: true,
      onread: {
        buffer: readBuffer,
        callback: (size) => {
          onBytes();
          const error = decode(readBuffer.subarray(0, size));
          if (error) socket.destroy(new Error(error));
          return true;
        },
      },
    });
    socket.on("connect", () =>
      socket.write(`GET ${path} HTTP/1.1\r\nhost: ${host}:${port}\r\naccept: text/event-stream\r\n\r\n`),
    );
    socket.on("error", reject);
  });
}
