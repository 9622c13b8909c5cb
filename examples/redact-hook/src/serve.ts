// Serves `transform_context` as the named hook server `server` (PROTOCOL "Remote hooks"): every
// instance joins queue group `hooks-<server>`, so each request is answered once.
import { subjects } from "@fleet/protocol";
import type { Logger } from "@fleet/runtime";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { z } from "zod";
import { redactSecrets } from "./redact.js";

const Request = z.object({
  sessionId: z.string(),
  runId: z.string().optional(),
  turn: z.number(),
  input: z.object({ messages: z.array(z.unknown()) }),
});

/**
 * Answers `{output: {messages}}` with the secrets redacted, or `{}` (no change) when there were none.
 * A request it cannot read gets `{error}`, which the loop treats as a failure (the run ends).
 */
export function serveRedaction(nc: NatsConnection, server: string, log: Logger): Subscription {
  return nc.subscribe(subjects.hookServer("transform_context", server), {
    queue: `hooks-${server}`,
    callback: (err, msg) => {
      if (err) return log.warn({ evt: "hook_subscription_error", error: err.message }, "subscription error");
      let body: unknown;
      try {
        body = msg.json();
      } catch {
        body = undefined;
      }
      const req = Request.safeParse(body);
      if (!req.success) {
        log.warn({ evt: "hook_bad_request" }, "unreadable transform_context request");
        msg.respond(JSON.stringify({ error: "unreadable request" }));
        return;
      }
      const { sessionId, runId, turn, input } = req.data;
      const { value, count } = redactSecrets(input.messages);
      // Never log the messages themselves: they hold the secrets.
      log.info({ evt: "hook_request", hook: "transform_context", sessionId, runId, turn, redacted: count }, "asked");
      msg.respond(JSON.stringify(count > 0 ? { output: { messages: value } } : {}));
    },
  });
}
