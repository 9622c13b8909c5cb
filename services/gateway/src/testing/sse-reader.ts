// A small SSE client over node:http for tests and the bench: frames as they arrive, with control
// over reading (pause) and headers (Last-Event-ID).
import { type IncomingHttpHeaders, type IncomingMessage, request } from "node:http";

/** One SSE frame; `comment` frames are `: …` lines. */
export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

/** An incremental parser: feed it text chunks, it calls `onFrame` per complete frame. */
export function sseParser(onFrame: (frame: SseFrame) => void): (chunk: string) => void {
  let buffer = "";
  return (chunk) => {
    buffer += chunk;
    for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const frame: SseFrame = {};
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) frame.comment = line.slice(1).trim();
        else {
          const colon = line.indexOf(":");
          const field = colon === -1 ? line : line.slice(0, colon);
          const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "id" || field === "event") frame[field] = value;
          else if (field === "data") frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
        }
      }
      onFrame(frame);
    }
  };
}

export interface SseStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** The raw response (pause it to read slowly). */
  response: IncomingMessage;
  /** Frames in arrival order; ends when the server ends or drops the stream. */
  frames: AsyncIterable<SseFrame>;
  /** Resolves when the stream has ended, with whether the server ended it cleanly. */
  ended: Promise<{ clean: boolean }>;
  close(): void;
}

/** Opens `url` with `Accept: text/event-stream`; resolves once the response headers arrived. */
export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: "text/event-stream", ...headers } }, (response) => {
      const queue: SseFrame[] = [];
      let wake: (() => void) | undefined;
      let done = false;
      let settle!: (v: { clean: boolean }) => void;
      const ended = new Promise<{ clean: boolean }>((r) => {
        settle = r;
      });
      const finish = (clean: boolean) => {
        if (done) return;
        done = true;
        settle({ clean });
        wake?.();
      };
      const parse = sseParser((frame) => {
        queue.push(frame);
        wake?.();
      });
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => parse(chunk));
      response.on("end", () => finish(true));
      response.on("error", () => finish(false));
      response.on("close", () => finish(response.complete));
      const frames: AsyncIterable<SseFrame> = {
        async *[Symbol.asyncIterator]() {
          for (;;) {
            const next = queue.shift();
            if (next) {
              yield next;
              continue;
            }
            if (done) return;
            await new Promise<void>((r) => {
              wake = r;
            });
            wake = undefined;
          }
        },
      };
      resolve({
        status: response.statusCode ?? 0,
        headers: response.headers,
        response,
        frames,
        ended,
        close: () => {
          req.destroy();
          finish(false);
        },
      });
    });
    req.on("error", reject);
    req.end();
  });
}
