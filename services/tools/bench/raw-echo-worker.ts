// Baseline worker for the benchmark: the same pull → publish reply → ack path as a runner, with no
// runner logic (no state lookup, no started record, no validation). Requests on BENCH_REQ
// (`bench.req.<id>`), replies to `bench.res.<id>` (stream BENCH_RES).
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";

const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
const js = jetstream(nc);
const jsm = await jetstreamManager(nc);
await jsm.consumers.add("BENCH_REQ", { durable_name: "echo", ack_policy: "explicit", filter_subject: "bench.req.>" });
const consumer = await js.consumers.get("BENCH_REQ", "echo");
const concurrency = Number(process.env.CONCURRENCY ?? 16);
let active = 0;
let wake: (() => void) | undefined;
process.on("SIGTERM", () => void nc.close().then(() => process.exit(0)));
process.stdout.write("ready\n");
for (;;) {
  const free = concurrency - active;
  if (free <= 0) {
    await new Promise<void>((r) => {
      wake = r;
    });
    continue;
  }
  const batch = await consumer.fetch({ max_messages: free, expires: 5_000 });
  for await (const m of batch) {
    active++;
    void (async () => {
      try {
        await js.publish(`bench.res.${m.subject.slice("bench.req.".length)}`, m.data);
        await m.ackAck();
      } finally {
        active--;
        wake?.();
        wake = undefined;
      }
    })();
  }
}
