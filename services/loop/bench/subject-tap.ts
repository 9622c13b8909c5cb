// A diagnostic for bench:loop (BENCH_TAP=1): the core messages the server routes during the runs
// on the subjects below, counted by the shape of its subject, per prompt. It shows what the loop's
// processes send besides the events (KV writes, API requests, acks) and what changed it.
import { connectNats } from "@fleet/runtime";

/** `fleet.evt.3.bench-1` → `fleet.evt.N`; inboxes by prefix; JetStream and KV subjects by their first 4 tokens. */
function shapeOf(subject: string): string {
  const t = subject.split(".");
  const head = t[0] ?? "";
  if (head.startsWith("_")) return `${head}.*`;
  if (head === "$JS" && t[1] === "ACK") return `$JS.ACK.${t[2]}`;
  if (head === "$JS" || head === "$KV") return t.slice(0, 4).join(".");
  return t
    .slice(0, 3)
    .map((x) => (/^[0-9]+$/.test(x) ? "N" : x))
    .join(".");
}

/**
 * What is tapped: not `>`, which would make the tap a responder of request subjects nobody else
 * answers (`fleet.hook.>` with no hook installed would time out instead of "no responders").
 */
const TAPPED = [
  "fleet.evt.>",
  "fleet.cmd.>",
  "fleet.tool.>",
  "fleet.openwork.>",
  "$KV.>",
  "$O.>",
  "$JS.>",
  "_INBOX.>",
  "_INBOX_tools.>",
];

export async function startSubjectTap(url: string): Promise<{ stop(prompts: number): Promise<string[]> }> {
  const nc = await connectNats({ url, name: "bench-tap" });
  const counts = new Map<string, number>();
  const count = (_err: unknown, msg: { subject: string; reply?: string }) => {
    const key = shapeOf(msg.subject) + (msg.reply ? " (with reply)" : "");
    counts.set(key, (counts.get(key) ?? 0) + 1);
  };
  for (const subject of TAPPED) nc.subscribe(subject, { callback: count });
  await nc.flush();
  return {
    async stop(prompts) {
      await nc.close();
      return [...counts]
        .sort((a, b) => b[1] - a[1])
        .map(([key, n]) => `tap ${(n / prompts).toFixed(2).padStart(7)} per prompt  ${key}`);
    },
  };
}
