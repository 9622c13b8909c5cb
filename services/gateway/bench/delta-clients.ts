// A child process of gateway.bench.ts that records when each text delta of each session arrived.
//   delta-clients.ts nats <natsUrl> <sessions> <turns> <deltas>            one core NATS subscriber on fleet.evt.>
//   delta-clients.ts sse <gatewayUrl> <sessions> <turns> <deltas> <from> <count>   SSE clients from..from+count-1,
//                                                                     client c follows session c % sessions
// Arrival times (epoch ms, sub-ms precision) go into a flat array indexed by (reader, turn, delta);
// the NATS subscriber also prints `end <session>` at each agent_end. It prints `ready` once every
// reader is connected, and on `dump` (stdin) prints `dump {"events": n, "arrived": [...]}` and exits.
import { connect } from "@nats-io/transport-node";
import { openRawSse } from "./raw-sse-reader.js";

const [mode, url, sessionsArg, turnsArg, deltasArg, fromArg = "0", countArg = "0"] = process.argv.slice(2);
const SESSIONS = Number(sessionsArg);
const TURNS = Number(turnsArg);
const DELTAS = Number(deltasArg);
const now = () => performance.timeOrigin + performance.now();
const readers = mode === "nats" ? SESSIONS : Number(countArg);
const arrived = new Float64Array(readers * TURNS * DELTAS).fill(Number.NaN);
const turn = new Int32Array(readers);
const index = new Int32Array(readers);
let events = 0;

interface Event {
  type: string;
  message?: { role: string };
  deltas?: { type: string }[];
  meta: { sessionId: string };
}

/** Records one event of reader `r`; returns true at agent_end. */
function record(r: number, e: Event, at: number): boolean {
  events++;
  if (e.type === "message_start" && e.message?.role === "assistant") index[r] = 0;
  else if (e.type === "message_update") {
    const k = turn[r] as number;
    for (const d of e.deltas ?? []) {
      if (d.type !== "text_delta") continue;
      const i = index[r] as number;
      index[r] = i + 1;
      if (k < TURNS && i < DELTAS) arrived[(r * TURNS + k) * DELTAS + i] = at;
    }
  } else if (e.type === "message_end" && e.message?.role === "assistant") turn[r] = (turn[r] as number) + 1;
  return e.type === "agent_end";
}

const sessionIndex = (sessionId: string) => Number(sessionId.slice("bench-".length));

if (mode === "nats") {
  const decoder = new TextDecoder();
  const nc = await connect({ servers: url, name: "bench-nats-baseline", noAsyncTraces: true });
  nc.subscribe("fleet.evt.>", {
    callback: (_err, msg) => {
      const at = now();
      const e = JSON.parse(decoder.decode(msg.data)) as Event;
      const s = sessionIndex(e.meta.sessionId);
      if (record(s, e, at)) process.stdout.write(`end ${s}\n`);
    },
  });
  await nc.flush();
  onDump(() => nc.close());
} else {
  // Cheap on purpose (this process reads hundreds of streams on a shared CPU, and is measuring
  // apparatus): raw sockets and bytes, no node:http client and no strings. The SSE `event:` field
  // picks the frames that matter; text deltas are counted in the frame without parsing its JSON.
  // A delta's arrival time is the time of the socket read that completed its frame.
  const from = Number(fromArg);
  const { hostname, port } = new URL(String(url));
  const TEXT_DELTA = Buffer.from('"type":"text_delta"');
  const ASSISTANT = Buffer.from('"role":"assistant"');
  let at = 0;
  const streams = await Promise.all(
    Array.from({ length: readers }, async (_, r) => {
      const session = (from + r) % SESSIONS;
      const onFrame = (event: string, frame: Buffer) => {
        events++;
        if (event === "message_update") {
          const k = turn[r] as number;
          for (let pos = frame.indexOf(TEXT_DELTA); pos !== -1; pos = frame.indexOf(TEXT_DELTA, pos + 1)) {
            const i = index[r] as number;
            index[r] = i + 1;
            if (k < TURNS && i < DELTAS) arrived[(r * TURNS + k) * DELTAS + i] = at;
          }
        } else if (event === "message_start" && frame.includes(ASSISTANT)) index[r] = 0;
        else if (event === "message_end" && frame.includes(ASSISTANT)) turn[r] = (turn[r] as number) + 1;
      };
      const path = `/v1/sessions/bench-${session}/events?after=0`;
      return openRawSse(hostname, Number(port), path, onFrame, () => {
        at = now();
      }).catch((err: Error) => {
        throw new Error(`SSE client ${from + r}: ${err.message}`);
      });
    }),
  );
  onDump(() => {
    for (const s of streams) s.close();
  });
}
process.stdout.write("ready\n");

function onDump(close: () => Promise<void> | void) {
  process.stdin.on("data", async (chunk) => {
    if (!chunk.toString().includes("dump")) return;
    await close();
    const out = JSON.stringify({ events, arrived: Array.from(arrived, (x) => (Number.isNaN(x) ? null : x)) });
    process.stdout.write(`dump ${out}\n`, () => process.exit(0));
  });
}
