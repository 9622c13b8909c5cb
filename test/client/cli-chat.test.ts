// `fleet chat` in a real terminal (tmux) against the fake loop: prompt, streamed reply, slash
// commands, a rejected command, /tree from the log, and Ctrl-C twice to quit.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FleetClient } from "@fleet/client";
import type { NatsServer } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLoop, type FakeLoopServer, startFakeLoopServer } from "./support/fake-loop.js";
import { HAS_TMUX, startFleetInTmux, type TmuxPane } from "./support/tmux.js";

describe.skipIf(!HAS_TMUX)("fleet chat (tmux, fake loop)", () => {
  let server: NatsServer;
  let stack: FakeLoopServer;
  let loop: FakeLoop;
  let client: FleetClient;
  let dir: string;
  let pane: TmuxPane | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "fleet-chat-"));
    stack = await startFakeLoopServer();
    ({ server, loop } = stack);
    client = await FleetClient.connect({ natsUrl: server.url });
  });

  afterAll(async () => {
    pane?.kill();
    await client?.close();
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates a session, streams replies, runs slash commands and quits on a double Ctrl-C", async () => {
    pane = startFleetInTmux(dir, ["--nats", server.url, "chat"], { FLEET_HOME: join(dir, ".fleet") });
    const header = await pane.waitFor(/fleet chat · session (s-[a-z0-9]+) \(new\)/);
    const sessionId = /session (s-[a-z0-9]+)/.exec(header)?.[1] as string;
    expect(loop.commands[0]).toMatchObject({ type: "create_session", sessionId });

    pane.send("hello there", "Enter");
    await pane.waitFor(/^echo: hello there$/m);
    await pane.waitFor(/^echo: hello there\n> $/m);

    pane.send("/thinking high", "Enter");
    await pane.waitFor(/^> \/thinking high\n> $/m);
    pane.send("/model claude-other", "Enter");
    pane.send("/followup later please", "Enter");
    await pane.waitFor(/follow-up queued/);
    pane.send("reject me", "Enter");
    await pane.waitFor(/✗ prompt rejected \(invalid\): rejected on request/);
    pane.send("/thinking loud", "Enter");
    await pane.waitFor(/✗ thinking level must be one of off, minimal, low, medium, high, xhigh/);
    pane.send("/nope", "Enter");
    await pane.waitFor(/unknown command \/nope \(\/help lists them\)/);

    pane.send("/tree", "Enter");
    const tree = await pane.waitFor(/◀ leaf/);
    expect(tree).toMatch(/● \S{8} user: "hello there"\n● \S{8} assistant: "echo: hello there" ◀ leaf/);

    const userEntry = /● (\S{8}) user: "hello there"/.exec(tree)?.[1] as string;
    pane.send(`/label ${userEntry} greeting`, "Enter");
    pane.send("/next tomorrow", "Enter");
    await pane.waitFor(/queued for the next run/);
    pane.send("/compact be brief", "Enter");
    await pane.waitFor(/compaction requested/);
    pane.send("/export", "Enter");
    await pane.waitFor(/✗ export: no session store is running \(no responders on fleet\.store\.export\)/);
    pane.send(`/fork ${userEntry}`, "Enter");
    const switched = await pane.waitFor(/switched to session (s-[a-z0-9]+)/);
    const forkedId = /switched to session (s-[a-z0-9]+)/.exec(switched)?.[1] as string;

    const sent = loop.commands
      .filter((c) => c.sessionId === sessionId || c.sessionId === forkedId)
      .map(({ id: _id, ts: _ts, sessionId: sid, ...rest }) => ({ sid: sid === sessionId ? "chat" : "fork", ...rest }));
    const userId = (await client.replay(sessionId)).tree.entries[0]?.id;
    expect(sent).toEqual([
      { sid: "chat", type: "create_session", config: {} },
      { sid: "chat", type: "prompt", text: "hello there" },
      { sid: "chat", type: "set_thinking_level", level: "high" },
      { sid: "chat", type: "set_model", provider: "anthropic", modelId: "claude-other" },
      { sid: "chat", type: "follow_up", text: "later please" },
      { sid: "chat", type: "prompt", text: "reject me" },
      { sid: "chat", type: "label", targetId: userId, label: "greeting" },
      { sid: "chat", type: "next_turn", text: "tomorrow" },
      { sid: "chat", type: "compact", instructions: "be brief" },
      { sid: "fork", type: "create_session", config: {}, forkFrom: { sessionId, entryId: userId } },
    ]);

    pane.send("C-c");
    await pane.waitFor(/\(Ctrl-C again to quit\)/);
    pane.send("C-c");
    expect(await pane.waitForExit()).toBe(true);
  }, 90_000);

  it("continues an existing session, showing its last messages", async () => {
    const accepted = await client.prompt("s-chat-existing", "earlier question");
    for await (const item of client.events("s-chat-existing", { from: accepted.seq })) {
      if (item.event.type === "agent_end") break;
    }
    pane = startFleetInTmux(dir, ["--nats", server.url, "chat", "s-chat-existing"], {
      FLEET_HOME: join(dir, ".fleet"),
    });
    const screen = await pane.waitFor(/^> $/m);
    expect(screen).toMatch(
      /fleet chat · session s-chat-existing {2}\/help for commands\nuser: "earlier question"\nassistant: "echo: earlier question"\n> /,
    );
    pane.send("/quit", "Enter");
    expect(await pane.waitForExit()).toBe(true);
  }, 60_000);
});
