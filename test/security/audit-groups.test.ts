// An audit feed of a log of 3 stream groups: `fleet audit-feed` makes one mirror per group's stream in
// the audit account, and the auditor reads every session of every group, new events included.
import { FleetClient } from "@fleet/client";
import { eventStreamNames } from "@fleet/protocol";
import { applyTopology } from "@fleet/runtime";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../client/support/run-cli.js";
import { publishEvents } from "../gateway/webhook-receivers.js";
import { sessionPerGroup } from "../support/session-per-group.js";
import { PARTITIONS, type SecuredNats, startSecuredNats } from "./support.js";

const GROUPS = 3;
let secured: SecuredNats;

beforeAll(async () => {
  secured = await startSecuredNats([{ name: "acme", audit: true }], { groups: GROUPS });
});
afterAll(async () => {
  await secured?.stop();
});

describe("audit feed / a log of 3 stream groups", () => {
  it("mirrors every group's stream, and the auditor reads sessions of every group", async () => {
    const loop = await secured.connectAs("acme", "loop");
    await applyTopology(loop.nc, { partitions: PARTITIONS, groups: GROUPS });
    const js = jetstream(loop.nc);
    const sessions = sessionPerGroup("s-audit-", PARTITIONS, GROUPS);
    for (const sid of sessions) await publishEvents(js, PARTITIONS, sid, [{ type: "session_info", name: sid }]);

    const created = await runCli(["audit-feed", "acme"], {
      env: { NATS_URL: secured.nats.url, FLEET_STREAM_GROUPS: String(GROUPS), ...secured.env("acme", "audit-admin") },
    });
    expect([created.code, created.stderr]).toEqual([0, ""]);
    expect(created.stdout).toMatch(/^audit feed of acme: mirror created \(3 stream groups\), \d+ events so far\n$/);

    const denied: string[] = [];
    const auditor = await FleetClient.connect({
      natsUrl: secured.nats.url,
      auth: secured.auth("acme", "auditor"),
      partitions: PARTITIONS,
      groups: GROUPS,
      onPermissionError: (line) => denied.push(line),
    });
    try {
      // Events appended after the mirrors were made reach them too.
      for (const sid of sessions) await publishEvents(js, PARTITIONS, sid, [{ type: "custom", data: { sid } }]);
      for (const [g, sid] of sessions.entries()) {
        expect(auditor.eventStream(sid)).toBe(`FLEET_EVENTS_G${g}`);
        await expect.poll(async () => (await auditor.replay(sid)).events, { timeout: 15_000 }).toBe(2);
        expect((await auditor.replay(sid)).tree.entries.map((e) => e.type)).toEqual(["session_info", "custom"]);
      }
      for (const stream of eventStreamNames(GROUPS)) {
        const info = await auditor.jsm.streams.info(stream);
        expect(info.config.mirror?.name, stream).toBe(stream);
        expect(info.state.messages, stream).toBe(2);
      }
      expect(denied).toEqual([]);
    } finally {
      await auditor.close();
    }
    // Made once: a second run finds them.
    const again = await runCli(["audit-feed", "acme"], {
      env: { NATS_URL: secured.nats.url, FLEET_STREAM_GROUPS: String(GROUPS), ...secured.env("acme", "audit-admin") },
    });
    expect(again.stdout).toMatch(/^audit feed of acme: mirror exists \(3 stream groups\), 6 events so far\n$/);
  }, 60_000);
});
