import { createScriptedProvider } from "@fleet/loop";
import { partitionOf } from "@fleet/protocol";
import { beforeAll, describe, expect, it } from "vitest";
import { useScriptedWorker } from "../support/worker-world.js";

const w = useScriptedWorker();

beforeAll(async () => {
  w.scripted.use(
    createScriptedProvider({ steps: Array.from({ length: 20 }, () => ({ text: "ok" })), now: () => 1 }).streamFn,
  );
  await w.cmd.send("bad-1", { type: "prompt", text: "make the session exist" });
  await w.cmd.waitFor("bad-1", (ev) => ev.some((e) => e.type === "agent_end"));
});

const big = "x".repeat(1024 * 1024 + 10);

describe("loop service / bad commands", () => {
  // Every kind of bad command is a decider spec (services/loop/src/decide/bad-commands.test.ts); here a
  // few cross the real wire, and the worker keeps serving after them.
  const cases: Array<{ name: string; data: string; msgId?: string; code: string; reason: RegExp; id?: string }> = [
    { name: "not JSON", data: "{nope", msgId: "bad-c1", code: "invalid", reason: /not JSON/ },
    {
      name: "unknown type",
      data: JSON.stringify({ type: "dance", id: "bad-c4", sessionId: "bad-1" }),
      code: "unsupported",
      reason: /dance/,
    },
    {
      name: "sessionId differs from the subject",
      data: JSON.stringify({ type: "abort", id: "bad-c9", sessionId: "other-session" }),
      code: "invalid",
      reason: /differs/,
    },
    {
      name: "label of an unknown entry",
      data: JSON.stringify({ type: "label", id: "bad-c11", sessionId: "bad-1", targetId: "no-such-entry", label: "x" }),
      code: "not_found",
      reason: /no-such-entry/,
    },
  ];

  it(`answers ${cases.length} kinds of bad command with command_rejected and keeps serving`, async () => {
    for (const c of cases) await w.cmd.sendRaw("bad-1", c.data, c.msgId ?? JSON.parse(c.data).id);
    await w.cmd.sendRaw("bad-1", new Uint8Array([0xff, 0xfe, 0x00]), "bad-c20");
    const events = await w.cmd.waitFor(
      "bad-1",
      (ev) => ev.filter((e) => e.type === "command_rejected").length >= cases.length + 1,
    );
    const rejections = events.filter((e) => e.type === "command_rejected");
    for (const c of cases) {
      const id = c.msgId ?? JSON.parse(c.data).id;
      const r = rejections.find((e) => e.type === "command_rejected" && e.commandId === id);
      expect(r, c.name).toBeDefined();
      expect(r?.type === "command_rejected" && r.code, c.name).toBe(c.code);
      expect(r?.type === "command_rejected" && r.reason, c.name).toMatch(c.reason);
    }
    const utf = rejections.find((e) => e.type === "command_rejected" && e.commandId === "bad-c20");
    expect(utf?.type === "command_rejected" && utf.reason).toMatch(/UTF-8/);
    // The worker still serves the session.
    await w.cmd.send("bad-1", { type: "prompt", text: "still alive?" });
    const after = await w.cmd.waitFor("bad-1", (ev) => ev.filter((e) => e.type === "agent_end").length >= 2);
    expect(after.filter((e) => e.type === "agent_end")).toHaveLength(2);
  });

  it("an oversize payload is refused by the server before it is stored (1 MB message limit)", async () => {
    await expect(w.cmd.sendRaw("bad-1", big, "bad-big")).rejects.toThrow(/max_payload|maximum payload/i);
  });

  it("a command without a Nats-Msg-Id header is rejected with commandId seq:<n>", async () => {
    await w.cmd.sendRaw("bad-1", "garbage");
    const events = await w.cmd.waitFor("bad-1", (ev) =>
      ev.some((e) => e.type === "command_rejected" && e.commandId.startsWith("seq:")),
    );
    const r = events.find((e) => e.type === "command_rejected" && e.commandId.startsWith("seq:"));
    expect(r?.type === "command_rejected" && r.commandId).toMatch(/^seq:\d+$/);
  });

  it("commands other than create/prompt/import to an unknown session are rejected not_found", async () => {
    await w.cmd.send("ghost-session", { type: "steer", text: "hello?" });
    const events = await w.cmd.waitFor("ghost-session", (ev) => ev.some((e) => e.type === "command_rejected"));
    expect(events.find((e) => e.type === "command_rejected")).toMatchObject({ code: "not_found" });
  });

  it("a slow run never blocks another session of the same partition", async () => {
    const slowSid = "slow-a";
    const p = partitionOf(slowSid, 16);
    let other = "";
    for (let i = 0; !other; i++) if (partitionOf(`fast-${i}`, 16) === p) other = `fast-${i}`;
    w.scripted.use(
      createScriptedProvider({
        steps: [{ text: "y".repeat(200), tokensPerSecond: 20 }, { text: "quick" }],
        now: () => 1,
        chunkChars: 4,
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
      }).streamFn,
    );
    await w.cmd.send(slowSid, { type: "prompt", text: "slow" });
    await w.cmd.waitFor(slowSid, (ev) => ev.some((e) => e.type === "message_update"));
    const t0 = Date.now();
    await w.cmd.send(other, { type: "create_session" });
    await w.cmd.waitFor(other, (ev) => ev.some((e) => e.type === "session_created"));
    expect(Date.now() - t0).toBeLessThan(1_500);
    const slowEvents = await w.cmd.events(slowSid);
    expect(slowEvents.some((e) => e.type === "agent_end")).toBe(false);
    await w.cmd.send(slowSid, { type: "abort" });
  });
});
