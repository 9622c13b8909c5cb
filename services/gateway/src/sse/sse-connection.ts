// One SSE client: history written with backpressure, then live frames through a bounded buffer.
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { commentFrame, type EncodedFrame, encodeFrame } from "./frame.js";
import { flushAtTurnEnd, type TurnFlushable } from "./turn-flush.js";

/** `slow`: dropped for falling behind; `closed`: the client went away or the stream ended. */
export type DropReason = "slow" | "closed";

/**
 * Contract: frames reach the client in strictly increasing sequence, each at most once (a frame at
 * or below `lastSeq` is ignored). Live frames never wait for the client: the frames (and comments)
 * of one turn of the event loop are written together at the end of that turn (`flushAtTurnEnd`),
 * and when the bytes the client has not taken yet exceed `maxBufferBytes` the connection is dropped
 * (the client resumes with Last-Event-ID). While the history is written, live frames queue under the
 * same bound.
 *
 * `res` must have sent its head (`flushHeaders`), with `Transfer-Encoding: chunked` when `chunked`.
 * From then on the connection writes the body to the socket itself, one write per history batch and
 * one per turn with live frames, of bytes encoded once for every client (each frame one HTTP/1.1
 * chunk when `chunked`, else as they are); `end()` writes what the turn holds and lets `res` end the
 * body.
 */
export class SseConnection implements TurnFlushable {
  readonly res: ServerResponse;
  readonly #socket: Socket;
  readonly #chunked: boolean;
  readonly #maxBufferBytes: number;
  readonly #onClose: (reason: DropReason) => void;
  /** Sequence of the last frame written. */
  lastSeq: number;
  #live = false;
  #queued: { seq: number; frame: EncodedFrame }[] = [];
  #queuedBytes = 0;
  /** Live bytes of this turn, written by `flushTurn`. */
  #turn: Buffer[] = [];
  #closed = false;

  constructor(
    res: ServerResponse,
    opts: { after: number; chunked: boolean; maxBufferBytes: number; onClose: (reason: DropReason) => void },
  ) {
    if (!res.headersSent || !res.socket) throw new Error("SseConnection: the response head must be sent");
    this.res = res;
    this.#socket = res.socket as Socket;
    this.#chunked = opts.chunked;
    this.lastSeq = opts.after;
    this.#maxBufferBytes = opts.maxBufferBytes;
    this.#onClose = opts.onClose;
    res.on("close", () => this.#close("closed"));
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** A live frame from the hub. */
  deliver(seq: number, frame: EncodedFrame): void {
    if (this.#closed || seq <= this.lastSeq) return;
    if (!this.#live) {
      this.#queued.push({ seq, frame });
      this.#queuedBytes += frame.bytes.length;
      if (this.#queuedBytes > this.#maxBufferBytes) this.drop();
      return;
    }
    this.lastSeq = seq;
    this.#hold(frame);
  }

  /** History frames up to `seq`; resolves once the client can take more (or the connection closed). */
  async history(seq: number, frames: EncodedFrame): Promise<void> {
    if (this.#closed || seq <= this.lastSeq) return;
    this.lastSeq = seq;
    if (this.#send(frames)) return;
    const socket = this.#socket;
    await new Promise<void>((resolve) => {
      const done = () => {
        socket.off("drain", done);
        this.res.off("close", done);
        resolve();
      };
      socket.on("drain", done);
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
    if (!this.#closed) this.#hold(encodeFrame([commentFrame(text)]));
  }

  /** Writes the live bytes of this turn: one socket write. */
  flushTurn(): void {
    const turn = this.#turn;
    if (turn.length === 0) return;
    this.#turn = [];
    if (this.#closed) return;
    this.#socket.write(turn.length === 1 ? (turn[0] as Buffer) : Buffer.concat(turn));
    if (this.#socket.writableLength > this.#maxBufferBytes) this.drop();
  }

  /** Ends the response normally (`follow=false`, shutdown). */
  end(): void {
    if (this.#closed) return;
    this.flushTurn();
    this.res.end();
    this.#close("closed");
  }

  /** Drops a client that fell too far behind. */
  drop(): void {
    if (this.#closed) return;
    this.#close("slow");
    this.res.destroy();
  }

  /** Writes `frame`; false when the socket buffers it (the client has not taken earlier bytes). */
  #send(frame: EncodedFrame): boolean {
    return this.#socket.write(this.#bytesOf(frame));
  }

  #bytesOf(frame: EncodedFrame): Buffer {
    return this.#chunked ? frame.chunk : frame.bytes;
  }

  /** Holds `frame` for this turn's write. */
  #hold(frame: EncodedFrame): void {
    if (this.#turn.length === 0) flushAtTurnEnd(this);
    this.#turn.push(this.#bytesOf(frame));
  }

  #close(reason: DropReason): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queued = [];
    this.#turn = [];
    this.#onClose(reason);
  }
}
