import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { type EncodedFrame, encodeFrame } from "./frame.js";
import { type DropReason, SseConnection } from "./sse-connection.js";

/** A response whose head was sent, over a socket that records each write and buffers `unsent` bytes. */
function fakeResponse(unsent = 0) {
  const writes: Buffer[] = [];
  const calls: string[] = [];
  const socket = { writableLength: unsent, write: (bytes: Buffer) => writes.push(Buffer.from(bytes)) > 0 };
  const res = Object.assign(new EventEmitter(), {
    headersSent: true,
    socket,
    end: () => calls.push("end"),
    destroy: () => calls.push("destroy"),
  });
  return { res: res as unknown as ServerResponse, writes, calls };
}

const frame = (seq: number): EncodedFrame => encodeFrame([`id: ${seq}\nevent: e\ndata: {}\n\n`]);
const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

function live(res: ServerResponse, maxBufferBytes = 1 << 20) {
  const closed: DropReason[] = [];
  const connection = new SseConnection(res, {
    after: 0,
    chunked: true,
    maxBufferBytes,
    onClose: (reason) => closed.push(reason),
  });
  connection.goLive();
  return { connection, closed };
}

describe("gateway / SSE connection", () => {
  it("writes the live frames of one turn with one socket write, in order, each once", async () => {
    const { res, writes } = fakeResponse();
    const { connection } = live(res);
    connection.deliver(1, frame(1));
    connection.deliver(2, frame(2));
    connection.deliver(2, frame(2));
    expect(writes).toHaveLength(0);
    await endOfTurn();
    expect(writes).toEqual([Buffer.concat([frame(1).chunk, frame(2).chunk])]);
    connection.deliver(3, frame(3));
    await endOfTurn();
    expect(writes).toEqual([Buffer.concat([frame(1).chunk, frame(2).chunk]), frame(3).chunk]);
    expect(connection.lastSeq).toBe(3);
  });

  it("writes what the turn holds before it ends the response, and nothing after", async () => {
    const { res, writes, calls } = fakeResponse();
    const { connection, closed } = live(res);
    connection.deliver(1, frame(1));
    connection.end();
    expect(writes).toEqual([frame(1).chunk]);
    expect(calls).toEqual(["end"]);
    connection.deliver(2, frame(2));
    await endOfTurn();
    expect(writes).toEqual([frame(1).chunk]);
    expect(closed).toEqual(["closed"]);
  });

  it("drops a client whose unsent bytes exceed the bound once the turn is written", async () => {
    const { res, writes, calls } = fakeResponse(2_000);
    const { connection, closed } = live(res, 1_000);
    connection.deliver(1, frame(1));
    await endOfTurn();
    expect(writes).toHaveLength(1);
    expect([closed, calls]).toEqual([["slow"], ["destroy"]]);
  });
});
