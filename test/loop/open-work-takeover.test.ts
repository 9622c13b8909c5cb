// Change 41 end to end: a worker SIGKILLed mid-run, with ended sessions of history beside the live
// one; the next holder resumes the run from the open-work index alone and reads nothing of the
// sessions without open work. Real nats-server, real loop processes, scripted LLM.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeEvent, partitionOf, STREAMS, subjects } from "@fleet/protocol";
import { endedSessionLog } from "@fleet/protocol/testing";
import { connectNats } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { commander } from "../support/loop-harness.js";
import { type LoopProcess, scriptedLoopEnv, spawnLoop, waitForLog } from "../support/loop-process.js";

const TTL = 1_000;
const PARTITIONS = 16;
let server: NatsServer;
let nc: NatsConnection;
let spy: NatsConnection;
let dir: string;
const procs: LoopProcess[] = [];

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "open-work-test" });
  spy = await connectNats({ url: server.url, name: "open-work-spy" });
  dir = mkdtempSync(join(tmpdir(), "fleet-open-work-"));
  // Turn 0 streams slowly (a run is in flight when its worker dies); later turns answer at once.
  writeFileSync(
    join(dir, "script.json"),
    JSON.stringify({ chunkChars: 4, turns: [{ text: "z".repeat(240), tokensPerSecond: 40 }, { text: "again" }] }),
  );
});
afterAll(async () => {
  for (const p of procs) await p.kill("SIGKILL");
  await spy?.close();
  await nc?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const env = () => scriptedLoopEnv(server.url, join(dir, "script.json"), TTL);

/** Waits until `p` logged `takeover_scanned` for every partition; returns those log lines. */
async function scanned(p: LoopProcess, timeoutMs = 20_000): Promise<Array<Record<string, unknown>>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lines = p
      .output()
      .split("\n")
      .filter((l) => l.includes('"evt":"takeover_scanned"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    if (new Set(lines.map((l) => l.partition)).size === PARTITIONS) return lines;
    if (Date.now() > deadline) throw new Error(`not every partition scanned: ${p.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("open-work index / takeover", () => {
  it("SIGKILL mid-run: the next holder resumes the run from the index and reads no session without open work", async () => {
    const a = spawnLoop(env(), "ow-a");
    procs.push(a);
    await waitForLog(a, "loop_started");
    // A starting worker says what it does, in order, before it is started.
    const steps = [
      "loop_topology",
      "loop_start_views",
      "loop_start_views_ready",
      "loop_start_claiming",
      "loop_start_claimed",
      "loop_started",
    ];
    const at = steps.map((evt) => a.output().indexOf(`"evt":"${evt}"`));
    expect(at.every((i) => i >= 0)).toBe(true);
    expect([...at].sort((x, y) => x - y)).toEqual(at);
    // The first holder scans each partition's (empty) log once and notes it.
    expect((await scanned(a)).every((l) => l.fullScan === true)).toBe(true);

    // 64 ended sessions of history, forged onto the log as finished runs leave it.
    const js = jetstream(nc);
    const history = Array.from({ length: 64 }, (_, i) => `ow-history-${i}`);
    for (const [i, id] of history.entries()) {
      for (const event of endedSessionLog(id, i)) {
        const encoded = encodeEvent(event);
        if (!encoded.ok) throw new Error(encoded.error);
        await js.publish(subjects.event(partitionOf(id, PARTITIONS), id), encoded.bytes);
      }
    }
    const cmd = commander(nc);
    const live = "ow-live";
    await cmd.send(live, { type: "prompt", text: "long one" });
    await cmd.waitFor(live, (ev) => ev.filter((e) => e.type === "message_update").length >= 2, 20_000);

    const requests: string[] = [];
    const sub = spy.subscribe("$JS.API.>", { callback: (_e, m) => void requests.push(`${m.subject} ${m.string()}`) });
    await spy.flush();
    await a.kill("SIGKILL");
    const b = spawnLoop(env(), "ow-b");
    procs.push(b);
    const events = await cmd.waitFor(live, (ev) => ev.some((e) => e.type === "agent_end"), 30_000);
    const lines = await scanned(b);
    sub.unsubscribe();

    // The run was resumed by the new holder, from the index: no partition was scanned in full.
    expect(events.some((e) => e.type === "run_resumed")).toBe(true);
    expect(events.some((e) => e.type === "owner_change" && e.workerId === "ow-b")).toBe(true);
    expect(lines.every((l) => l.fullScan === false)).toBe(true);
    expect(lines.find((l) => l.partition === partitionOf(live, PARTITIONS))?.listed).toBe(1);
    // The spy saw the new holder read the index; no request named an ended session, and no
    // partition's subjects of FLEET_EVENTS were listed.
    expect(requests.some((r) => r.startsWith(`$JS.API.STREAM.INFO.${STREAMS.openWork.name}`))).toBe(true);
    expect(requests.filter((r) => history.some((id) => r.includes(id)))).toEqual([]);
    expect(
      requests.filter(
        (r) => r.startsWith(`$JS.API.STREAM.INFO.${STREAMS.events.name}`) && r.includes("subjects_filter"),
      ),
    ).toEqual([]);

    // The run's end removed its entry: the index is empty again.
    const jsm = await jetstreamManager(nc);
    for (let i = 0; i < 100; i++) {
      const info = await jsm.streams.info(STREAMS.openWork.name, { subjects_filter: "fleet.openwork.*.*" });
      if (Object.keys(info.state.subjects ?? {}).length === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const info = await jsm.streams.info(STREAMS.openWork.name, { subjects_filter: "fleet.openwork.*.*" });
    expect(info.state.subjects ?? {}).toEqual({});
    await b.kill("SIGTERM");
  }, 90_000);
});
