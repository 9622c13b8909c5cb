// A runnable tour of the SDK. With a stack running (`fleet up` or `npm start`):
//   npx tsx --conditions=@fleet/source libs/client/examples/quickstart.ts
// It connects where NATS_URL points (default nats://127.0.0.1:4222).
import { CommandRejectedError, FleetClient } from "@fleet/client";

const client = await FleetClient.connect({ natsUrl: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
try {
  // 1. A new session; resolves once the loop accepted the command.
  const { sessionId } = await client.createSession({ thinkingLevel: "off" });
  console.log(`session ${sessionId} (partition ${client.partitionOf(sessionId)} of ${client.partitions})`);

  // 2. A prompt; its events come after the command_accepted event, at `accepted.seq`.
  const accepted = await client.prompt(sessionId, "List the files in the workspace.");
  for await (const { seq, event } of client.events(sessionId, { from: accepted.seq })) {
    if (event.type === "message_update") {
      for (const delta of event.deltas) if (delta.type === "text_delta") process.stdout.write(delta.delta);
    }
    if (event.type === "tool_execution_start") console.log(`\n[tool] ${event.toolName} ${JSON.stringify(event.args)}`);
    if (event.type === "agent_end") {
      console.log(`\n[agent_end at seq ${seq}]`);
      break;
    }
  }

  // 3. The agent state, folded live from the log with the protocol's reducers.
  const live = await client.state(sessionId);
  console.log(`messages: ${live.agent.messages.map((m) => m.role).join(", ")}; streaming: ${live.agent.isStreaming}`);
  live.close();

  // 4. Time travel: the state as it stood just after the prompt was accepted.
  const then = await client.replay(sessionId, { toSeq: accepted.seq });
  console.log(`at seq ${then.seq}: ${then.agent.messages.length} messages, ${then.tree.entries.length} entries`);

  // 5. Rejections carry the loop's code and reason.
  try {
    await client.navigate(sessionId, "no-such-entry");
  } catch (error) {
    if (!(error instanceof CommandRejectedError)) throw error;
    console.log(`rejected: ${error.code} (${error.reason})`);
  }
} finally {
  await client.close();
}
