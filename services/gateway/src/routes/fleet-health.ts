// `GET /v1/fleet/health`: what `fleet doctor` reads (partitions and owners, runners and tools, lags).
import { inspectDeployment } from "@fleet/client";
import { z } from "zod";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import type { RouteContext } from "./route-context.js";

const FleetHealth = z.object({
  partitions: z.number().nullable(),
  /** K, the event log's stream groups. */
  groups: z.number(),
  protocol: z.number().nullable(),
  streams: z.array(
    z.object({ name: z.string(), exists: z.boolean(), messages: z.number(), drift: z.array(z.string()) }),
  ),
  leases: z.array(
    z.object({
      role: z.enum(["loop", "store"]),
      /** `p`: partition leases (loop, P of them); `g`: stream-group leases (store, K of them). */
      unit: z.enum(["p", "g"]),
      total: z.number(),
      held: z.number(),
      holders: z.record(z.string(), z.array(z.number())),
      unheld: z.array(z.number()),
    }),
  ),
  workers: z.object({ loop: z.array(z.string()), store: z.array(z.string()), runners: z.array(z.string()) }),
  tools: z.array(
    z.object({
      name: z.string(),
      description: z.string(),
      runners: z.array(z.string()),
      queued: z.number(),
      running: z.number(),
      consumer: z.boolean(),
    }),
  ),
  storeLag: z.number().nullable(),
  commandBacklog: z.number().nullable(),
  storeConsumersMissing: z.number(),
  storage: z.object({
    usedBytes: z.number().nullable(),
    limitBytes: z.number().nullable(),
    full: z.boolean(),
    probeError: z.string().nullable(),
  }),
});

export function fleetHealthRoutes(ctx: RouteContext): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "GET",
      url: "/v1/fleet/health",
      operationId: "fleetHealth",
      summary: "The deployment as `fleet doctor` sees it",
      description:
        "Partition count, streams, lease holders per partition (loop and store), live workers and tool runners, tools with their queued and running calls, store lag and command backlog, and storage: whether JetStream takes writes (`full` when it refuses them for lack of room) and the account's use and limit.",
      tag: "ops",
      access: "read",
      usesNats: true,
      responses: { 200: { description: "The deployment report", schema: FleetHealth } },
      async handler({ principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        return { status: 200, json: await inspectDeployment(link.client.nc, link.client.jsm) };
      },
    }),
  ];
}
