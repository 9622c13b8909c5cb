// One `bash` call through NATS, as the loop makes it, for scripts/image-test.sh: prints the
// command's output (`pid1=<name of PID 1 where it ran>`), or the error.
import { decodeToolResultRecord, encodeToolCallRequest, STREAMS, subjects, toolCallMsgId } from "@fleet/protocol";
import { connectNats, newId } from "@fleet/runtime";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";

const nc = await connectNats({ url: process.env.NATS_URL ?? "", name: "image-test-call" });
const js = jetstream(nc);
const jsm = await jetstreamManager(nc);
const call = {
  sessionId: "s-image-test",
  runId: newId(),
  toolCallId: `toolu_${Date.now()}`,
  toolName: "bash",
  args: { command: 'echo "pid1=$(cat /proc/1/comm)"' },
  deadline: Date.now() + 60_000,
};
const encoded = encodeToolCallRequest(call);
if (!encoded.ok) throw new Error(encoded.error);
await js.publish(subjects.toolCall("bash"), encoded.bytes, { msgID: toolCallMsgId(call.sessionId, call.toolCallId) });
const subject = subjects.toolResult(call.sessionId, call.toolCallId);
const end = Date.now() + 60_000;
let out = "no result within 60 s";
while (Date.now() < end) {
  const last = await jsm.streams.getMessage(STREAMS.toolResults.name, { last_by_subj: subject }).catch(() => null);
  const record = last ? decodeToolResultRecord(last.data) : undefined;
  if (record?.ok && record.value.kind === "result") {
    const text = record.value.content.map((c) => ("text" in c ? c.text : "")).join("");
    out = record.value.isError ? `error: ${text}` : text.trim();
    break;
  }
  await new Promise((r) => setTimeout(r, 200));
}
console.log(out);
await nc.close();
