import { shardOf } from "./keys.js";
import type { SessionRepo, SessionTouch, SessionWrite, WriteResult } from "./session-repo.js";

/**
 * Gathers the session writes and index touches of one batch by shard and sends each shard's in
 * one script call (`SessionRepo.writeShard`) once `chunk` writes are waiting, or on `flush()`. A
 * call per session cost Redis and the client more than the writes themselves.
 */
export interface ShardWriter {
  /** Resolves with the write's result once its shard's call returned (rejects if the call failed). */
  write(w: SessionWrite): Promise<WriteResult>;
  /** Raises a session's sessions index entry (sent with its shard's next call). */
  touch(t: SessionTouch): void;
  /** Sends everything waiting; resolves once every call made so far succeeded (rejects otherwise). */
  flush(): Promise<void>;
}

interface Waiting {
  touches: SessionTouch[];
  writes: SessionWrite[];
  settle: Array<{ resolve: (r: WriteResult) => void; reject: (err: unknown) => void }>;
}

export function createShardWriter(repo: SessionRepo, ns: string, chunk: number): ShardWriter {
  const waiting = new Map<number, Waiting>();
  const calls: Array<Promise<void>> = [];
  const of = (shard: number): Waiting => {
    let w = waiting.get(shard);
    if (!w) {
      w = { touches: [], writes: [], settle: [] };
      waiting.set(shard, w);
    }
    return w;
  };
  const send = (shard: number) => {
    const w = waiting.get(shard);
    if (!w) return;
    waiting.delete(shard);
    const call = repo.writeShard(ns, shard, w.touches, w.writes).then(
      (results) => {
        for (let i = 0; i < w.settle.length; i++) w.settle[i]?.resolve(results[i] as WriteResult);
      },
      (err: unknown) => {
        for (const s of w.settle) s.reject(err);
        throw err;
      },
    );
    // Reported by flush(); handled here so it is never an unhandled rejection meanwhile.
    call.catch(() => undefined);
    calls.push(call);
  };
  return {
    write(write) {
      const shard = shardOf(write.sessionId);
      const w = of(shard);
      w.writes.push(write);
      const result = new Promise<WriteResult>((resolve, reject) => w.settle.push({ resolve, reject }));
      if (w.writes.length >= chunk) send(shard);
      return result;
    },
    touch(touch) {
      of(shardOf(touch.sessionId)).touches.push(touch);
    },
    async flush() {
      for (const shard of [...waiting.keys()]) send(shard);
      await Promise.all(calls);
    },
  };
}
