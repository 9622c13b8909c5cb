// The named hook servers' shell around its ports (an asker, the fold, the append, the object store),
// in memory: the order of servers, a logged decision answering instead of the server, and a large
// output stored by reference and read back.
import { foldSessionEvents, type SessionState } from "@fleet/protocol";
import { SESSION_ID, T0, userMessage } from "@fleet/protocol/testing";
import type { BlobAccess } from "@fleet/runtime";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { HOOK_OUTPUT_INLINE_BYTES } from "./decide/hook-decision.js";
import { stampDraft } from "./decide/stamp-draft.js";
import { createHookServers, type HookSessionPort } from "./hook-servers.js";
import type { HookAsker, HookRequestOutcome } from "./hooks.js";
import { given, secondRunStarted } from "./testing/decider-spec.js";

type Answer = (subject: string, payload: { input: Record<string, unknown> }) => HookRequestOutcome<unknown>;

/** An asker answering from `answer`, validating replies with the real schema; it records each subject asked. */
function asker(answer: Answer) {
  const asked: string[] = [];
  const ask: HookAsker = async <T>(subject: string, payload: unknown, schema: z.ZodType<T>) => {
    asked.push(subject);
    const out = answer(subject, payload as { input: Record<string, unknown> });
    if (out.kind !== "reply") return out;
    const parsed = schema.safeParse(out.value);
    return parsed.success
      ? { kind: "reply", value: parsed.data }
      : { kind: "failed", reason: `invalid reply from ${subject}` };
  };
  return { ask, asked };
}

/** A session in its first turn, whose appends are folded; an object store in memory. */
function session(): HookSessionPort & { state: SessionState; objects: Map<string, Uint8Array> } {
  const objects = new Map<string, Uint8Array>();
  const state = given(...secondRunStarted(userMessage("hello"))).state;
  const blobs: BlobAccess = {
    read: async (ref) => objects.get(`${ref.bucket}/${ref.name}`),
    info: async () => undefined,
    write: async (bucket, name, bytes) => {
      objects.set(`${bucket}/${name}`, bytes);
      return { size: bytes.length, digest: "SHA-256=spec" };
    },
    copy: async () => false,
  };
  return {
    sessionId: SESSION_ID,
    state,
    objects,
    fold: () => state,
    record: async (body) => {
      foldSessionEvents(
        [stampDraft(state, { id: `h${state.events}`, body }, { sessionId: SESSION_ID, producer: "spec", now: T0 })],
        state,
      );
    },
    blobs,
  };
}

const text = (t: string) => ({ messages: [userMessage(t)] });
const decisionsOf = (s: SessionState) => [...s.hookDecisions.values()];

describe("named hook servers / the shell", () => {
  it("asks the servers in order, each with the previous one's output, and logs each change", async () => {
    const port = session();
    const { ask, asked } = asker((subject, { input }) => {
      const t = (input.messages as { content: { text: string }[] }[])[0]?.content[0]?.text;
      return subject.endsWith(".a")
        ? { kind: "reply", value: { output: text(`${t}+a`) } }
        : { kind: "reply", value: { output: text(`${t}+b`) } };
    });
    const out = await createHookServers(ask, ["a", "b"]).run("transform_context", text("x"), port);
    expect(asked).toEqual(["fleet.hook.transform_context.a", "fleet.hook.transform_context.b"]);
    expect(out).toEqual(text("x+a+b"));
    expect(decisionsOf(port.state)).toEqual([{ output: text("x+a") }, { output: text("x+a+b") }]);
  });

  it("a decision the fold holds answers instead of the server; only the servers after it are asked", async () => {
    const port = session();
    const first = asker(() => ({ kind: "reply", value: { output: text("redacted") } }));
    await createHookServers(first.ask, ["a"]).run("transform_context", text("secret"), port);
    const again = asker((subject) =>
      subject.endsWith(".a") ? { kind: "failed", reason: "must not be asked" } : { kind: "none" },
    );
    const out = await createHookServers(again.ask, ["a", "b"]).run("transform_context", text("secret"), port);
    expect(out).toEqual(text("redacted"));
    expect(again.asked).toEqual(["fleet.hook.transform_context.b"]);
  });

  it("a large output goes to the object store, is logged by reference, and is read back from it", async () => {
    const port = session();
    const big = text("y".repeat(HOOK_OUTPUT_INLINE_BYTES));
    const first = asker(() => ({ kind: "reply", value: { output: big } }));
    expect(await createHookServers(first.ask, ["a"]).run("transform_context", text("x"), port)).toEqual(big);
    const [record] = decisionsOf(port.state);
    expect(record?.output).toBeUndefined();
    expect(record?.outputRef).toMatchObject({
      bucket: "fleet_blobs",
      name: expect.stringMatching(/^hooks\/.+\/transform_context\/a\/[0-9a-f]{64}$/),
    });
    expect(port.objects.size).toBe(1);
    const again = asker(() => ({ kind: "failed", reason: "must not be asked" }));
    expect(await createHookServers(again.ask, ["a"]).run("transform_context", text("x"), port)).toEqual(big);
    expect(again.asked).toEqual([]);
  });

  it("a failure throws its reason and logs nothing; no responders changes nothing", async () => {
    const port = session();
    const failing = asker(() => ({
      kind: "failed",
      reason: "Remote hook fleet.hook.on_payload.a timed out after 5 ms",
    }));
    await expect(createHookServers(failing.ask, ["a"]).run("on_payload", { systemPrompt: "s" }, port)).rejects.toThrow(
      "Remote hook fleet.hook.on_payload.a timed out after 5 ms",
    );
    const absent = asker(() => ({ kind: "none" }));
    const input = { stop: false };
    expect(await createHookServers(absent.ask, ["a"]).run("should_stop_after_turn", input, port)).toBe(input);
    expect(port.state.hookDecisions.size).toBe(0);
  });
});
