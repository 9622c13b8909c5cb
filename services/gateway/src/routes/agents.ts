// Agents (PROTOCOL "Agents"): named definitions whose versions are written once, in the tenant's KV
// `fleet_agents`. `POST /v1/agents` writes version 1, `POST /v1/agents/{name}/versions` the next;
// reads answer each version with how many sessions run it (the store's agents index). A session is
// created from one with `POST /v1/sessions {agent}` and moved with the `set_agent` command.
import type { FleetClient } from "@fleet/client";
import { AgentName, AgentSettings, AgentVersion } from "@fleet/protocol";
import { z } from "zod";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import type { RouteContext } from "./route-context.js";

const AgentBody = z
  .object({ name: AgentName, description: z.string().max(4096).optional(), settings: AgentSettings })
  .strict();
const VersionBody = z.object({ description: z.string().max(4096).optional(), settings: AgentSettings }).strict();
const NameParams = z.object({ name: AgentName });
const VersionParams = z.object({ name: AgentName, version: z.coerce.number().int().positive().max(999_999_999) });

const CountedVersion = AgentVersion.extend({
  /** Sessions that run this version now (created from it or moved to it, not deleted). */
  sessions: z.number().int().nonnegative(),
});
const AgentDetails = z.object({
  name: AgentName,
  latest: z.number().int().positive(),
  versions: z.array(CountedVersion),
});
const AgentList = z.object({
  agents: z.array(
    z.object({
      name: AgentName,
      latest: z.number().int().positive(),
      updatedAt: z.number().int().nonnegative(),
      /** Sessions that run any of its versions. */
      sessions: z.number().int().nonnegative(),
    }),
  ),
});

const SETTINGS =
  "A version holds `settings`: `model`, `thinkingLevel`, `systemPrompt`, `activeTools` (null: every tool), `compaction`, `budget` and `approvalRules`; fields absent keep the defaults. A version is never changed: an update writes the next one.";

/** Sessions per `name@version`, from the store's index. */
async function countsOf(client: FleetClient, name?: string): Promise<Map<string, number>> {
  const reply = await client.countAgentSessions(name);
  return new Map(reply.counts.map((c) => [`${c.name}@${c.version}`, c.sessions]));
}

export function agentRoutes(ctx: RouteContext): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "GET",
      url: "/v1/agents",
      operationId: "listAgents",
      summary: "The tenant's agents, each with its latest version and how many sessions run it",
      tag: "agents",
      access: "read",
      usesNats: true,
      responses: { 200: { description: "Agents by name", schema: AgentList } },
      async handler({ principal }) {
        const { client } = await ctx.links.forTenant(principal.tenant);
        const [agents, counts] = await Promise.all([client.agents.list(), countsOf(client)]);
        const sessionsOf = (name: string) =>
          [...counts].reduce((n, [ref, c]) => (ref.startsWith(`${name}@`) ? n + c : n), 0);
        return { status: 200, json: { agents: agents.map((a) => ({ ...a, sessions: sessionsOf(a.name) })) } };
      },
    }),
    defineRoute({
      method: "POST",
      url: "/v1/agents",
      operationId: "createAgent",
      summary: "Create an agent: writes its version 1",
      description: SETTINGS,
      tag: "agents",
      access: "operate",
      usesNats: true,
      body: AgentBody,
      responses: {
        201: { description: "Version 1", schema: AgentVersion },
        409: { description: "The agent exists (write its next version instead)" },
      },
      async handler({ body, principal }) {
        const { client } = await ctx.links.forTenant(principal.tenant);
        const written = await client.agents.create(body.name, {
          settings: body.settings,
          ...(body.description !== undefined ? { description: body.description } : {}),
        });
        ctx.logger.info(
          { evt: "gateway_agent_written", tenant: principal.tenant, agent: written.name, version: 1 },
          "agent created",
        );
        return { status: 201, json: written };
      },
    }),
    defineRoute({
      method: "GET",
      url: "/v1/agents/:name",
      operationId: "getAgent",
      summary: "An agent's versions, oldest first, each with how many sessions run it",
      tag: "agents",
      access: "read",
      usesNats: true,
      params: NameParams,
      responses: { 200: { description: "The agent", schema: AgentDetails }, 404: { description: "No such agent" } },
      async handler({ params, principal }) {
        const { client } = await ctx.links.forTenant(principal.tenant);
        const [details, counts] = await Promise.all([client.agents.show(params.name), countsOf(client, params.name)]);
        const versions = details.versions.map((v) => ({ ...v, sessions: counts.get(`${v.name}@${v.version}`) ?? 0 }));
        return { status: 200, json: { ...details, versions } };
      },
    }),
    defineRoute({
      method: "POST",
      url: "/v1/agents/:name/versions",
      operationId: "updateAgent",
      summary: "Write an agent's next version (sessions pinned to older versions keep them)",
      description: `${SETTINGS} Concurrent writes each get their own number.`,
      tag: "agents",
      access: "operate",
      usesNats: true,
      params: NameParams,
      body: VersionBody,
      responses: {
        201: { description: "The new version", schema: AgentVersion },
        404: { description: "No such agent (create it first)" },
      },
      async handler({ params, body, principal }) {
        const { client } = await ctx.links.forTenant(principal.tenant);
        const written = await client.agents.update(params.name, {
          settings: body.settings,
          ...(body.description !== undefined ? { description: body.description } : {}),
        });
        ctx.logger.info(
          { evt: "gateway_agent_written", tenant: principal.tenant, agent: written.name, version: written.version },
          "agent version written",
        );
        return { status: 201, json: written };
      },
    }),
    defineRoute({
      method: "GET",
      url: "/v1/agents/:name/versions/:version",
      operationId: "getAgentVersion",
      summary: "One version of an agent, with how many sessions run it",
      tag: "agents",
      access: "read",
      usesNats: true,
      params: VersionParams,
      responses: {
        200: { description: "The version", schema: CountedVersion },
        404: { description: "No such version" },
      },
      async handler({ params, principal }) {
        const { client } = await ctx.links.forTenant(principal.tenant);
        const [version, counts] = await Promise.all([
          client.agents.get(params.name, params.version),
          countsOf(client, params.name),
        ]);
        return { status: 200, json: { ...version, sessions: counts.get(`${version.name}@${version.version}`) ?? 0 } };
      },
    }),
  ];
}
