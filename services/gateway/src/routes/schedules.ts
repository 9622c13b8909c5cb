// Schedules (PROTOCOL "Schedules", change 55): `/v1/schedules` creates, lists, shows (with the next
// fires), pauses, resumes, triggers and deletes them, and reads each one's history of slot outcomes.
import {
  OverlapPolicy,
  ScheduleDefinition,
  ScheduleEvent,
  ScheduleId,
  ScheduleSlot,
  type ScheduleView,
} from "@fleet/protocol";
import { z } from "zod";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import type { RouteContext } from "./route-context.js";

const Params = z.object({ id: ScheduleId });
const Slot = ScheduleSlot;
const View = z.object({
  scheduleId: ScheduleId,
  definition: ScheduleDefinition,
  createdAt: z.number().int(),
  paused: z.boolean(),
  pauseNote: z.string().optional(),
  /** The next nominal times (ms since the epoch); empty while paused or after the end. */
  nextFires: z.array(z.number().int()),
  lastFire: z.object({ slot: Slot, commandId: z.string(), sessionId: z.string() }).optional(),
  buffered: Slot.optional(),
  pendingTriggers: z.number().int(),
  counts: z.object({
    fired: z.number().int(),
    skipped: z.number().int(),
    missed: z.number().int(),
    failed: z.number().int(),
    buffered: z.number().int(),
  }),
});
const PauseBody = z.object({ note: z.string().max(1024).optional() });
const HistoryQuery = z.object({ limit: z.coerce.number().int().min(1).max(1000).optional() }).strict();
const History = z.object({ items: z.array(z.object({ seq: z.number().int(), event: ScheduleEvent })) });
const POLICIES = `Overlap policies (${OverlapPolicy.options.join(", ")}) act while the previous fire's run is open.`;

const viewJson = (view: ScheduleView) => view as z.infer<typeof View>;

export function scheduleRoutes(ctx: RouteContext): AnyRouteSpec[] {
  const client = async (tenant: string) => (await ctx.links.forTenant(tenant)).client.schedules;
  return [
    defineRoute({
      method: "GET",
      url: "/v1/schedules",
      operationId: "listSchedules",
      summary: "The tenant's schedules, with their next fires",
      tag: "schedules",
      access: "read",
      usesNats: true,
      responses: { 200: { description: "Every schedule", schema: z.object({ schedules: z.array(View) }) } },
      async handler({ principal }) {
        const views = await (await client(principal.tenant)).list();
        return { status: 200, json: { schedules: views.map(viewJson) } };
      },
    }),
    defineRoute({
      method: "POST",
      url: "/v1/schedules",
      operationId: "createSchedule",
      summary: "Create a schedule (cron in a time zone, an interval, or one time)",
      description: `A fire's commands have ids derived from the schedule and the slot, so a slot fires at most once. ${POLICIES} A schedule id that exists is a 409.`,
      tag: "schedules",
      access: "operate",
      usesNats: true,
      body: ScheduleDefinition,
      responses: { 201: { description: "Created", schema: View }, 409: { description: "The schedule id exists" } },
      async handler({ body, principal }) {
        const view = await (await client(principal.tenant)).create(body);
        ctx.logger.info(
          { evt: "gateway_schedule_created", tenant: principal.tenant, scheduleId: view.scheduleId },
          "schedule created",
        );
        return { status: 201, json: viewJson(view) };
      },
    }),
    defineRoute({
      method: "GET",
      url: "/v1/schedules/:id",
      operationId: "getSchedule",
      summary: "A schedule, its state and next fires",
      tag: "schedules",
      access: "read",
      usesNats: true,
      params: Params,
      responses: { 200: { description: "The schedule", schema: View }, 404: { description: "No such schedule" } },
      async handler({ params, principal }) {
        return { status: 200, json: viewJson(await (await client(principal.tenant)).get(params.id)) };
      },
    }),
    defineRoute({
      method: "DELETE",
      url: "/v1/schedules/:id",
      operationId: "deleteSchedule",
      summary: "Delete a schedule and its history",
      tag: "schedules",
      access: "operate",
      usesNats: true,
      params: Params,
      responses: { 204: { description: "Deleted" }, 404: { description: "No such schedule" } },
      async handler({ params, principal }) {
        await (await client(principal.tenant)).remove(params.id);
        return { status: 204, text: "", contentType: "text/plain" };
      },
    }),
    defineRoute({
      method: "POST",
      url: "/v1/schedules/:id/pause",
      operationId: "pauseSchedule",
      summary: "Pause a schedule: its slots pass without firing until it is resumed",
      tag: "schedules",
      access: "operate",
      usesNats: true,
      params: Params,
      body: PauseBody,
      responses: { 200: { description: "The schedule", schema: View }, 404: { description: "No such schedule" } },
      async handler({ params, body, principal }) {
        const view = await (await client(principal.tenant)).pause(params.id, {
          by: `http:${principal.tenant}`,
          ...(body.note !== undefined ? { note: body.note } : {}),
        });
        return { status: 200, json: viewJson(view) };
      },
    }),
    defineRoute({
      method: "POST",
      url: "/v1/schedules/:id/resume",
      operationId: "resumeSchedule",
      summary: "Resume a paused schedule from now on (the slots that passed while paused do not fire)",
      tag: "schedules",
      access: "operate",
      usesNats: true,
      params: Params,
      responses: { 200: { description: "The schedule", schema: View }, 404: { description: "No such schedule" } },
      async handler({ params, principal }) {
        const view = await (await client(principal.tenant)).resume(params.id, { by: `http:${principal.tenant}` });
        return { status: 200, json: viewJson(view) };
      },
    }),
    defineRoute({
      method: "POST",
      url: "/v1/schedules/:id/trigger",
      operationId: "triggerSchedule",
      summary: "Fire a schedule now (under its overlap policy, paused or not)",
      tag: "schedules",
      access: "operate",
      usesNats: true,
      params: Params,
      responses: {
        202: { description: "Asked; the scheduler fires it", schema: z.object({ triggerId: z.string() }) },
        404: { description: "No such schedule" },
      },
      async handler({ params, principal }) {
        const { triggerId } = await (await client(principal.tenant)).trigger(params.id, {
          by: `http:${principal.tenant}`,
        });
        return { status: 202, json: { triggerId } };
      },
    }),
    defineRoute({
      method: "GET",
      url: "/v1/schedules/:id/history",
      operationId: "getScheduleHistory",
      summary:
        "A schedule's log, newest first: every slot's outcome (fired, buffered, skipped, missed, failed) and why",
      tag: "schedules",
      access: "read",
      usesNats: true,
      params: Params,
      query: HistoryQuery,
      responses: { 200: { description: "The history", schema: History }, 404: { description: "No such schedule" } },
      async handler({ params, query, principal }) {
        const items = await (await client(principal.tenant)).history(params.id, {
          ...(query.limit !== undefined ? { limit: query.limit } : {}),
        });
        return { status: 200, json: { items } };
      },
    }),
  ];
}
