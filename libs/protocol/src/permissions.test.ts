import { describe, expect, it } from "vitest";
import { auditFeed, auditMirrorStream, FLEET_ROLES, inboxPrefixOf, rolePermissions } from "./permissions.js";

const perms = (role: (typeof FLEET_ROLES)[number]) => rolePermissions(role, { partitions: 4, toolNames: ["bash"] });
const allows = (list: string[], subject: string) =>
  list.some((rule) => {
    const [pattern] = rule.split(" ");
    const p = (pattern ?? "").split(".");
    const s = subject.split(".");
    for (let i = 0; i < p.length; i++) {
      if (p[i] === ">") return s.length > i;
      if (p[i] !== "*" && p[i] !== s[i]) return false;
    }
    return p.length === s.length;
  });
const mayPublish = (role: (typeof FLEET_ROLES)[number], subject: string) =>
  allows(perms(role).publish.allow, subject) && !allows(perms(role).publish.deny, subject);

describe("permissions / rolePermissions", () => {
  it("gives no role a full wildcard or the whole JetStream API", () => {
    for (const role of FLEET_ROLES) {
      const all = [...perms(role).publish.allow, ...perms(role).subscribe.allow];
      expect(
        all.filter((s) => s === ">" || s.startsWith("$JS.API.>") || s === "_INBOX.>"),
        role,
      ).toEqual([]);
    }
  });

  it("lets each role subscribe to its own inbox prefix only", () => {
    for (const role of FLEET_ROLES) {
      expect(
        perms(role).subscribe.allow.filter((s) => s.startsWith("_INBOX")),
        role,
      ).toEqual([`${inboxPrefixOf(role)}.>`]);
    }
  });

  it("keeps each stream's writers and consumers to their roles", () => {
    expect(mayPublish("loop", "fleet.evt.0.s-1")).toBe(true);
    expect(mayPublish("tools", "fleet.evt.0.s-1")).toBe(false);
    expect(mayPublish("operator", "fleet.evt.0.s-1")).toBe(false);
    expect(mayPublish("operator", "fleet.cmd.0.s-1")).toBe(true);
    expect(mayPublish("reader", "fleet.cmd.0.s-1")).toBe(false);
    expect(mayPublish("tools", "$JS.API.CONSUMER.MSG.NEXT.FLEET_TOOL_CALLS.tool-bash")).toBe(true);
    expect(mayPublish("loop", "$JS.API.CONSUMER.MSG.NEXT.FLEET_TOOL_CALLS.tool-bash")).toBe(false);
    expect(mayPublish("loop", "$JS.API.CONSUMER.MSG.NEXT.FLEET_COMMANDS.loop-p3")).toBe(true);
    expect(mayPublish("store", "$JS.API.CONSUMER.MSG.NEXT.FLEET_EVENTS.store-g0")).toBe(true);
    expect(mayPublish("reader", "$JS.API.CONSUMER.MSG.NEXT.FLEET_EVENTS.store-g0")).toBe(false);
    expect(mayPublish("reader", "$JS.API.CONSUMER.DELETE.FLEET_EVENTS.store-g0")).toBe(false);
    expect(mayPublish("reader", "$JS.API.CONSUMER.MSG.NEXT.FLEET_EVENTS.ordered_1")).toBe(true);
    expect(mayPublish("auditor", "$JS.API.STREAM.CREATE.FLEET_EVENTS")).toBe(false);
    expect(mayPublish("audit-admin", "$JS.API.STREAM.CREATE.FLEET_EVENTS")).toBe(true);
    for (const role of FLEET_ROLES) expect(mayPublish(role, "$JS.API.STREAM.DELETE.FLEET_EVENTS"), role).toBe(false);
    // Health reports write the storage probe key, and no other key of fleet_config.
    expect(mayPublish("reader", "$KV.fleet_config.probe")).toBe(true);
    expect(mayPublish("reader", "$KV.fleet_config.partitions")).toBe(false);
    expect(mayPublish("operator", "$KV.fleet_config.protocol")).toBe(false);
    expect(mayPublish("loop", "$KV.fleet_leases.loop.p.3")).toBe(true);
    expect(mayPublish("loop", "$KV.fleet_leases.store.p.3")).toBe(false);
    expect(mayPublish("loop", "$KV.fleet_leases.runner.r-1")).toBe(false);
    expect(mayPublish("store", "$KV.fleet_leases.store.w.s-1")).toBe(true);
    expect(mayPublish("tools", "$KV.fleet_leases.runner.r-1")).toBe(true);
    expect(mayPublish("tools", "$KV.fleet_leases.loop.p.0")).toBe(false);
  });

  it("names every group's stream with K = 3: the store consumes its own, others read them", () => {
    const k3 = (role: (typeof FLEET_ROLES)[number]) => rolePermissions(role, { partitions: 8, groups: 3 });
    const may = (role: (typeof FLEET_ROLES)[number], subject: string) => {
      const p = k3(role).publish;
      return allows(p.allow, subject) && !allows(p.deny, subject);
    };
    expect(may("store", "$JS.API.CONSUMER.MSG.NEXT.FLEET_EVENTS_G2.store-g2")).toBe(true);
    expect(may("store", "$JS.ACK.FLEET_EVENTS_G1.store-g1.1.2.3.4.5")).toBe(true);
    expect(may("reader", "$JS.API.CONSUMER.MSG.NEXT.FLEET_EVENTS_G2.store-g2")).toBe(false);
    expect(may("reader", "$JS.API.DIRECT.GET.FLEET_EVENTS_G1")).toBe(true);
    expect(may("loop", "$JS.API.STREAM.PURGE.FLEET_EVENTS_G2")).toBe(true);
    expect(may("loop", "$JS.API.STREAM.CREATE.FLEET_EVENTS_G0")).toBe(true);
    expect(may("tools", "$JS.API.DIRECT.GET.FLEET_EVENTS_G0.fleet.evt.lifecycle.*")).toBe(true);
    expect(may("reader", "$JS.API.STREAM.INFO.FLEET_EVENTS")).toBe(false);
    // Webhooks for every session pull a consumer on each group's stream; audit feeds mirror each.
    expect(may("gateway", "$JS.ACK.FLEET_EVENTS_G2.webhook-wh-1.1.2.3.4.5")).toBe(true);
    expect(may("auditor", "$JS.API.DIRECT.GET.FLEET_EVENTS_G2")).toBe(true);
    expect(may("audit-admin", "$JS.API.STREAM.CREATE.FLEET_EVENTS_G1")).toBe(true);
    expect(may("audit-admin", "$JS.API.STREAM.CREATE.FLEET_EVENTS")).toBe(false);
  });

  it("exports every group's stream to an audit feed, and mirrors each under its own name", () => {
    expect(auditFeed("acme").serviceExports).toEqual([
      "$JS.API.CONSUMER.CREATE.FLEET_EVENTS",
      "$JS.API.CONSUMER.CREATE.FLEET_EVENTS.>",
      "$JS.FC.FLEET_EVENTS.>",
    ]);
    expect(auditFeed("acme", 3).serviceExports).toHaveLength(9);
    expect(auditFeed("acme", 3).serviceExports).toContain("$JS.FC.FLEET_EVENTS_G2.>");
    const mirror = auditMirrorStream("acme", 1, 3);
    expect([mirror.name, mirror.mirror.name, mirror.mirror.external.api]).toEqual([
      "FLEET_EVENTS_G1",
      "FLEET_EVENTS_G1",
      "$JS.acme.API",
    ]);
    expect(auditMirrorStream("acme").name).toBe("FLEET_EVENTS");
  });

  it("gives the gateway an operator's reads and commands, the budget's limits and its webhooks, nothing more", () => {
    expect(mayPublish("gateway", "fleet.cmd.0.s-1")).toBe(true);
    expect(mayPublish("gateway", "fleet.store.get_tree")).toBe(true);
    expect(mayPublish("gateway", "$KV.fleet_budgets.limits")).toBe(true);
    expect(mayPublish("gateway", "$KV.fleet_spend.session.2026-01-01.s-1")).toBe(false);
    expect(mayPublish("gateway", "$KV.fleet_spend.total.2026-01-01.0")).toBe(false);
    expect(mayPublish("gateway", "$KV.fleet_spend_totals.total.2026-01-01.0")).toBe(false);
    expect(mayPublish("loop", "$KV.fleet_spend_totals.total.2026-01-01.0")).toBe(true);
    expect(mayPublish("gateway", "$KV.fleet_webhooks.wh-1")).toBe(true);
    expect(mayPublish("gateway", "$JS.API.STREAM.CREATE.KV_fleet_webhooks")).toBe(true);
    expect(mayPublish("gateway", "$JS.API.CONSUMER.MSG.NEXT.FLEET_EVENTS.webhook-wh-1")).toBe(true);
    expect(mayPublish("gateway", "$JS.ACK.FLEET_EVENTS.webhook-wh-1.1.2.3.4.5")).toBe(true);
    expect(mayPublish("gateway", "fleet.evt.0.s-1")).toBe(false);
    expect(mayPublish("gateway", "$JS.API.STREAM.CREATE.FLEET_EVENTS")).toBe(false);
    expect(mayPublish("gateway", "$JS.API.CONSUMER.MSG.NEXT.FLEET_EVENTS.store-g0")).toBe(false);
    expect(mayPublish("gateway", "$KV.fleet_leases.loop.p.0")).toBe(false);
    expect(mayPublish("operator", "$KV.fleet_webhooks.wh-1")).toBe(false);
    expect(inboxPrefixOf("gateway")).toBe("_INBOX_gateway");
  });

  it("lets only the store answer queries, in its queue group, and a hook service hook requests", () => {
    expect(perms("store").subscribe.allow).toContain("fleet.store.* fleet-store");
    expect(perms("store").allowResponses).toBe(true);
    expect(FLEET_ROLES.filter((r) => perms(r).allowResponses)).toEqual(["store", "hooks"]);
    // Only the store announces what its indexes took in (change 74); the gateway's change feed hears it.
    expect(FLEET_ROLES.filter((r) => mayPublish(r, "fleet.store.applied.0"))).toEqual(["store"]);
    expect(allows(perms("gateway").subscribe.allow, "fleet.store.applied.3")).toBe(true);
    expect(perms("hooks").subscribe.allow).toEqual(["fleet.hook.>", "_INBOX_hooks.>"]);
    expect(perms("hooks").publish).toEqual({ allow: [], deny: [">"] });
  });
});
