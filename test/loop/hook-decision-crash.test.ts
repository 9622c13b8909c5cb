// The Done-when of change 53: a remote `transform_context` decision survives a SIGKILL of the loop
// worker and is not asked again on resume. Real processes: two loop workers one after the other, the
// example redaction hook server (examples/redact-hook), nats-server, the Anthropic SDK on the fake.
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import type { FleetEvent } from "@fleet/protocol";
import { fakeReply, fakeText, type RecordedRequest } from "@fleet/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { useLoopCrashWorld } from "../support/loop-crash-world.js";
import { commander } from "../support/loop-harness.js";
import { waitForLog } from "../support/loop-process.js";

const ROOT = join(import.meta.dirname, "..", "..");
let hookServer: ChildProcess | undefined;
let hookOutput = "";

const world = useLoopCrashWorld({
  name: "hook-decision-crash-test",
  leaseTtlMs: 1_000,
  env: { FLEET_HOOK_SERVERS: "redact,hold" },
});
// Registered after the world's: it runs first, while nats-server still serves.
afterAll(async () => {
  if (hookServer && hookServer.exitCode === null) {
    const exited = new Promise<void>((resolve) => hookServer?.once("exit", () => resolve()));
    hookServer.kill("SIGTERM");
    await exited;
  }
});

/** Starts the example hook server as `redact`; resolves once it serves. */
async function startRedactHook(): Promise<void> {
  const child = spawn(
    process.execPath,
    ["--conditions=@fleet/source", "--import", "tsx", join(ROOT, "examples/redact-hook/src/main.ts")],
    {
      env: { ...process.env, NATS_URL: world.server.url, FLEET_HOOK_SERVER_NAME: "redact", LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  hookServer = child;
  child.stdout?.on("data", (d) => (hookOutput += d));
  child.stderr?.on("data", (d) => (hookOutput += d));
  const deadline = Date.now() + 20_000;
  while (!hookOutput.includes('"evt":"hook_server_started"')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`hook server did not start: ${hookOutput}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The requests the hook server answered (it logs one line per request). */
const hookRequests = () => hookOutput.split("\n").filter((l) => l.includes('"evt":"hook_request"')).length;
const sentText = (r: RecordedRequest) => JSON.stringify(r.body?.messages);

const SID = "crash-hook-decision";
const SECRET = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789";

describe("loop service / a hook decision survives a worker crash", () => {
  it("the new owner applies the logged transform_context decision without asking the hook server again", async () => {
    await startRedactHook();
    const a = world.spawn("loop-hooks-a");
    await waitForLog(a, "loop_started");
    const cmd = commander(world.nc);
    // A second server, `hold`, keeps A's on_payload request unanswered: A dies after the redaction
    // is logged and before its LLM call; the next owner gets `{}` (no change) from it.
    let holding = true;
    const held: string[] = [];
    const hold = world.nc.subscribe("fleet.hook.on_payload.hold", {
      callback: (_e, m) => {
        held.push(JSON.stringify(m.json()));
        if (!holding) m.respond("{}");
      },
    });
    await world.nc.flush();
    world.fake.script(fakeReply([fakeText("done")]));
    await cmd.send(SID, { type: "prompt", text: `deploy with ${SECRET}` });
    for (let i = 0; i < 300 && held.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    const cut = await cmd.events(SID);
    expect(cut.filter((e) => e.type === "hook_decision")).toHaveLength(1);
    expect(hookRequests()).toBe(1);
    await a.kill("SIGKILL");
    holding = false;

    world.spawn("loop-hooks-b");
    const events = await cmd.waitFor(SID, (ev) => ev.some((e) => e.type === "agent_end"), 20_000);
    const resumed = events.slice(cut.length);
    expect(resumed.some((e) => e.type === "owner_change" && e.workerId === "loop-hooks-b")).toBe(true);
    expect(resumed.some((e) => e.type === "run_resumed")).toBe(true);
    // Asked once (by A), applied twice: both LLM calls were sent the redacted context.
    expect(hookRequests()).toBe(1);
    expect(events.filter((e) => e.type === "hook_decision")).toHaveLength(1);
    hold.unsubscribe();
    // The request B's on_payload server saw, and the one the model was sent, are the redacted ones.
    expect(held).toHaveLength(2);
    for (const request of held) expect(request).not.toContain(SECRET);
    expect(world.fake.requests).toHaveLength(1);
    expect(sentText(world.fake.requests[0] as RecordedRequest)).toContain("deploy with [REDACTED:anthropic_key]");
    expect(sentText(world.fake.requests[0] as RecordedRequest)).not.toContain(SECRET);
    // The transcript keeps what the user sent; the run ends with the model's answer.
    const user = events.find((e): e is Extract<FleetEvent, { type: "message_end" }> => e.type === "message_end");
    expect(JSON.stringify(user?.message)).toContain(SECRET);
    const last = events.filter((e) => e.type === "message_end").at(-1);
    expect(last?.type === "message_end" && last.message.role === "assistant" && last.message.stopReason).toBe("stop");
  });
});
