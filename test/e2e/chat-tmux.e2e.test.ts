// `fleet chat` as a person uses it, driven under tmux (send-keys / capture-pane): a prompt, a /steer
// while a tool runs, Ctrl-C mid-stream, /tree, and Ctrl-C twice to quit. Needs the loop service and tmux.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FLEET_BIN } from "../client/support/run-cli.js";
import { FROM_SOURCE } from "../support/node-entry.js";
import { type FleetStack, startFleetStack } from "./support/fleet-stack.js";

const HAS_LOOP = existsSync(fileURLToPath(new URL("../../services/loop/src/main.ts", import.meta.url)));
const HAS_TMUX = spawnSync("tmux", ["-V"]).status === 0;

const STORY = `Once upon a time ${"there was a fleet of agents that streamed tokens over NATS. ".repeat(40)}The end.`;
const SCRIPT = {
  tokensPerSecond: 25,
  chunkChars: 4,
  turns: [
    {
      content: [
        { type: "text", text: "Running a slow command." },
        { type: "toolCall", id: "call_sleep_1", name: "bash", arguments: { command: "sleep 4; echo slept" } },
      ],
    },
    { text: "Steered: bye." },
    { text: STORY },
  ],
};

describe.skipIf(!HAS_LOOP || !HAS_TMUX)("e2e / fleet chat under tmux", () => {
  let stack: FleetStack;
  let scriptDir: string;
  const tmuxSession = `fleet-e2e-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync("tmux", args, { encoding: "utf8" });
  const screen = () => tmux("capture-pane", "-p", "-J", "-t", tmuxSession, "-S", "-2000");
  const waitFor = async (pattern: RegExp, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const text = screen();
      if (pattern.test(text)) return text;
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${pattern}; screen:\n${text}\nservice logs:\n${stackLogs()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  // The tail of each service's log, for a failure's message.
  const stackLogs = () =>
    ["loop", "tools", "store"]
      .map((name) => {
        const file = join(stack.home, "logs", `${name}.log`);
        const lines = existsSync(file) ? readFileSync(file, "utf8").trimEnd().split("\n").slice(-60) : [];
        return `--- ${name}.log\n${lines.join("\n")}`;
      })
      .join("\n");
  const alive = () => spawnSync("tmux", ["has-session", "-t", tmuxSession]).status === 0;

  beforeAll(async () => {
    scriptDir = mkdtempSync(join(tmpdir(), "fleet-chat-script-"));
    const scriptFile = join(scriptDir, "chat-script.json");
    writeFileSync(scriptFile, JSON.stringify(SCRIPT));
    stack = await startFleetStack({ FLEET_PROVIDER: "scripted", FLEET_SCRIPT: scriptFile });
    const launcher = join(stack.dir, "chat.sh");
    writeFileSync(
      launcher,
      `#!/bin/sh\ncd '${stack.dir}'\nexport FLEET_HOME='${stack.home}' FLEET_FROM_SOURCE=${FROM_SOURCE ? 1 : 0} NO_COLOR=1\nunset NATS_URL\nexec '${process.execPath}' '${FLEET_BIN}' chat\n`,
      { mode: 0o755 },
    );
    tmux("new-session", "-d", "-s", tmuxSession, "-x", "200", "-y", "50", launcher);
  }, 240_000);

  afterAll(async () => {
    if (alive()) tmux("kill-session", "-t", tmuxSession);
    await stack?.stop();
    rmSync(scriptDir, { recursive: true, force: true });
  });

  it("prompts, steers while a tool runs, aborts mid-stream, draws the tree and quits", async () => {
    await waitFor(/fleet chat · session s-/);
    tmux("send-keys", "-t", tmuxSession, "run the slow command", "Enter");
    await waitFor(/bash\(command: "sleep 4; echo slept"\)/);
    await waitFor(/Running a slow command\./);
    tmux("send-keys", "-t", tmuxSession, "/steer say bye", "Enter");
    const afterRun = await waitFor(/Steered: bye\.\n> $/m, 40_000);
    expect(afterRun).toMatch(/steering message queued/);
    expect(afterRun).toMatch(/✓ bash\(command: "sleep 4; echo slept"\)\n {2}slept/);
    expect(afterRun).toMatch(/› say bye\n(.*\n)*Steered: bye\./);

    tmux("send-keys", "-t", tmuxSession, "tell me a story", "Enter");
    await waitFor(/Once upon a time there was a fleet/);
    tmux("send-keys", "-t", tmuxSession, "C-c");
    const aborted = await waitFor(/⏹ aborted/, 20_000);
    expect(aborted).toMatch(/⏹ aborting \(Ctrl-C again to quit\)/);
    expect(aborted).not.toMatch(/The end\./);
    await new Promise((r) => setTimeout(r, 2_500));

    tmux("send-keys", "-t", tmuxSession, "/tree", "Enter");
    const tree = await waitFor(/◀ leaf/);
    expect(tree).toMatch(/user: "run the slow command"/);
    expect(tree).toMatch(/assistant: "Once upon a time.*\(aborted\) ◀ leaf/);

    tmux("send-keys", "-t", tmuxSession, "C-c");
    tmux("send-keys", "-t", tmuxSession, "C-c");
    const deadline = Date.now() + 10_000;
    while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(alive()).toBe(false);
  }, 180_000);
});
