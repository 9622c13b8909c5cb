import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createGatewayMetrics } from "./metrics.js";
import { createStorageAlarm } from "./storage-alarm.js";

describe("gateway / storage alarm", () => {
  it("counts every refusal and logs once per 30 s of an outage, with the refusals since the last line", async () => {
    const registry = new Registry();
    const metrics = createGatewayMetrics(registry, () => 0);
    const lines: unknown[] = [];
    let now = 1_000;
    const alarm = createStorageAlarm({ logger: { warn: (obj: unknown) => lines.push(obj) }, metrics, now: () => now });
    alarm.refused("/v1/sessions/:id/commands");
    for (let i = 0; i < 5; i++) {
      now += 1_000;
      alarm.refused("/v1/sessions/:id/commands");
    }
    now += 30_000;
    alarm.refused("/v1/sessions");
    expect(lines).toEqual([
      { evt: "storage_full", route: "/v1/sessions/:id/commands", refused: 1 },
      { evt: "storage_full", route: "/v1/sessions", refused: 6 },
    ]);
    const counted = (await metrics.publishesRefused.get()).values.map((v) => [v.labels.route, v.value]);
    expect(counted).toEqual([
      ["/v1/sessions/:id/commands", 6],
      ["/v1/sessions", 1],
    ]);
  });
});
