// A subscriber in its own process, as another service would be: it follows fleet.evt.> on core NATS.
// It records, for every text delta, when it arrived (epoch ms with sub-ms precision), into a flat
// array indexed by (session, assistant turn, delta) like loop.bench.ts's send times, and reports
// every agent_end at once as a line `end <session index>` on stdout. On "dump" (stdin) it prints
// {"events": n, "arrived": [...]} (null where nothing arrived) and exits. Used by loop.bench.ts.
import { connect } from "@nats-io/transport-node";

const [url = "nats://127.0.0.1:4222", sessionsArg = "200", turnsArg = "10", deltasArg = "64"] = process.argv.slice(2);
const TURNS = Number(turnsArg);
const DELTAS = Number(deltasArg);
const now = () => performance.timeOrigin + performance.now();
const decoder = new TextDecoder();
const arrived = new Float64Array(Number(sessionsArg) * TURNS * DELTAS).fill(Number.NaN);
const turn = new Map<number, number>();
const index = new Map<number, number>();
let events = 0;

const nc = await connect({ servers: url, name: "bench-delta-subscriber", noAsyncTraces: true });
nc.subscribe("fleet.evt.>", {
  callback: (_err, msg) => {
    const at = now();
    events++;
    const e = JSON.parse(decoder.decode(msg.data)) as {
      type: string;
      message?: { role: string };
      deltas?: { type: string }[];
      meta: { sessionId: string };
    };
    const s = Number(e.meta.sessionId.slice("bench-".length));
    if (e.type === "message_start" && e.message?.role === "assistant") index.set(s, 0);
    else if (e.type === "message_update") {
      const k = turn.get(s) ?? 0;
      for (const d of e.deltas ?? []) {
        if (d.type !== "text_delta") continue;
        const i = index.get(s) ?? 0;
        index.set(s, i + 1);
        if (k < TURNS && i < DELTAS) arrived[(s * TURNS + k) * DELTAS + i] = at;
      }
    } else if (e.type === "message_end" && e.message?.role === "assistant") turn.set(s, (turn.get(s) ?? 0) + 1);
    else if (e.type === "agent_end") process.stdout.write(`end ${s}\n`);
  },
});
await nc.flush();
process.stdout.write("ready\n");
process.stdin.on("data", async (chunk) => {
  if (!chunk.toString().includes("dump")) return;
  await nc.close();
  const out = JSON.stringify({ events, arrived: Array.from(arrived, (x) => (Number.isNaN(x) ? null : x)) });
  // Exit only once the (large) line is flushed into the pipe.
  process.stdout.write(`dump ${out}\n`, () => process.exit(0));
});
