// A subscriber in its own process, as another service would be: it follows fleet.evt.> on core NATS
// and records, for every text delta, when it arrived (epoch ms with sub-ms precision). On "dump" (stdin)
// it prints {"<sessionId>|<turn>|<deltaIndex>": arrivedAt, …} and exits. Used by loop.bench.ts.
import { connect } from "@nats-io/transport-node";

const url = process.argv[2] ?? "nats://127.0.0.1:4222";
const now = () => performance.timeOrigin + performance.now();
const decoder = new TextDecoder();
const arrived: Record<string, number> = {};
const turn = new Map<string, number>();
const index = new Map<string, number>();
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
    const sid = e.meta.sessionId;
    if (e.type === "message_start" && e.message?.role === "assistant") index.set(sid, 0);
    else if (e.type === "message_update") {
      const k = turn.get(sid) ?? 0;
      for (const d of e.deltas ?? []) {
        if (d.type !== "text_delta") continue;
        const i = index.get(sid) ?? 0;
        index.set(sid, i + 1);
        arrived[`${sid}|${k}|${i}`] = at;
      }
    } else if (e.type === "message_end" && e.message?.role === "assistant") turn.set(sid, (turn.get(sid) ?? 0) + 1);
  },
});
await nc.flush();
process.stdout.write("ready\n");
process.stdin.on("data", async (chunk) => {
  if (!chunk.toString().includes("dump")) return;
  await nc.close();
  // Exit only once the (large) line is flushed into the pipe.
  process.stdout.write(`${JSON.stringify({ events, arrived })}\n`, () => process.exit(0));
});
