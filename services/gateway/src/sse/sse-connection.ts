// One SSE client: history written with backpressure, then live frames through a bounded buffer.
import type { ServerResponse } from "node:http";
import { commentFrame } from "./frame.js";

/** An SSE frame: a hub encodes each live frame once, for all its clients. */
export type Frame = string | Uint8Array;

/** `slow`: dropped for falling behind; `closed`: the client went away or the stream ended. */
export type DropReason = "slow" | "closed";

/**
 * Contract: frames reach the client in strictly increasing sequence, each at most once (a frame at
 * or below `lastSeq` is ignored). Live frames never wait: they are written at once, and when the
 * bytes the client has not taken yet exceed `maxBufferBytes` the connection is dropped (the client
 * resumes with Last-Event-ID). While the history is written, live frames queue under the same bound.
 */
export class SseConnection {
  readonly res: ServerResponse;
  readonly #maxBufferBytes: number;
  readonly #onClose: (reason: DropReason) => void;
  /** Sequence of the last frame written. */
  lastSeq: number;
  #live = false;
  #queued: { seq: number; frame: Frame }[] = [];
  #queuedBytes = 0;
  #closed = false;

  constructor(
    res: ServerResponse,
    opts: { after: number; maxBufferBytes: number; onClose: (reason: DropReason) => void },
  ) {
    this.res = res;
    this.lastSeq = opts.after;
    this.#maxBufferBytes = opts.maxBufferBytes;
    this.#onClose = opts.onClose;
    res.on("close", () => this.#close("closed"));
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** A live frame from the hub. */
  deliver(seq: number, frame: Frame): void {
    if (this.#closed || seq <= this.lastSeq) return;
    if (!this.#live) {
      this.#queued.push({ seq, frame });
      this.#queuedBytes += frame.length;
      if (this.#queuedBytes > this.#maxBufferBytes) this.drop();
      return;
    }
    this.lastSeq = seq;
    this.#write(frame);
  }

  /** A history frame; resolves once the client can take more (or the connection closed). */
  async history(seq: number, frame: string): Promise<void> {
    if (this.#closed || seq <= this.lastSeq) return;
    this.lastSeq = seq;
    if (this.res.write(frame)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.res.off("drain", done);
        this.res.off("close", done);
        resolve();
      };
      this.res.on("drain", done);
      this.res.on("close", done);
    });
  }

  /** Ends the history: writes the live frames that queued meanwhile and switches to live delivery. */
  goLive(): void {
    if (this.#closed) return;
    this.#live = true;
    const queued = this.#queued;
    this.#queued = [];
    this.#queuedBytes = 0;
    for (const { seq, frame } of queued) this.deliver(seq, frame);
  }

  comment(text: string): void {
    if (!this.#closed) this.#write(commentFrame(text));
  }

  /** Ends the response normally (`follow=false`, shutdown). */
  end(): void {
    if (this.#closed) return;
    this.res.end();
    this.#close("closed");
  }

  /** Drops a client that fell too far behind. */
  drop(): void {
    if (this.#closed) return;
    this.#close("slow");
    this.res.destroy();
  }

  #write(frame: Frame): void {
    this.res.write(frame);
    if (this.res.writableLength > this.#maxBufferBytes) this.drop();
  }

  #close(reason: DropReason): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queued = [];
    this.#onClose(reason);
  }
}
