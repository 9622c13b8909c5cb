// `fleet agent create|update|show|list|new|set`: agents as named, versioned definitions
// (PROTOCOL "Agents"): write a version, read them, start a session from one, move a session to one.
import { readFileSync } from "node:fs";
import type { AgentSettings, AgentVersion, ThinkingLevel } from "@fleet/protocol";
import type { AgentDefinition } from "../../agents.js";
import type { FleetClient } from "../../fleet-client.js";
import { newSessionId } from "../../ids.js";
import { CliError, EXIT } from "../cli-error.js";
import { withClient } from "../connect.js";
import { type CliIo, outStyle } from "../io.js";
import { readJsonArgument } from "./approval-commands.js";

/** The flags of `create` and `update`: a settings JSON, and fields that replace its own. */
export interface AgentWriteOptions {
  settings?: string;
  model?: string;
  thinking?: ThinkingLevel;
  systemPrompt?: string;
  tools?: string;
  description?: string;
  json?: boolean;
}

/** The version's definition from the flags (`--system-prompt @file` reads a file). */
export function definitionOf(opts: AgentWriteOptions): AgentDefinition {
  const base = opts.settings !== undefined ? readJsonArgument(opts.settings, "--settings") : {};
  if (typeof base !== "object" || base === null || Array.isArray(base)) {
    throw new CliError("--settings must be a JSON object", EXIT.usage);
  }
  const settings = { ...(base as Record<string, unknown>) } as AgentSettings & Record<string, unknown>;
  if (opts.model !== undefined) {
    const slash = opts.model.indexOf("/");
    if (slash <= 0 || slash === opts.model.length - 1) {
      throw new CliError("--model is <provider>/<modelId>, e.g. anthropic/claude-sonnet-5", EXIT.usage);
    }
    settings.model = { provider: opts.model.slice(0, slash), modelId: opts.model.slice(slash + 1) };
  }
  if (opts.thinking !== undefined) settings.thinkingLevel = opts.thinking;
  if (opts.systemPrompt !== undefined) {
    settings.systemPrompt = opts.systemPrompt.startsWith("@")
      ? readText(opts.systemPrompt.slice(1))
      : opts.systemPrompt;
  }
  if (opts.tools !== undefined) {
    settings.activeTools =
      opts.tools === "all"
        ? null
        : opts.tools
            .split(",")
            .map((t) => t.trim())
            .filter(Boolean);
  }
  return { settings, ...(opts.description !== undefined ? { description: opts.description } : {}) };
}

function readText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

function printVersion(io: CliIo, v: AgentVersion, sessions: number | undefined): void {
  const s = v.settings;
  const parts = [
    s.model ? `${s.model.provider}/${s.model.modelId}` : undefined,
    s.thinkingLevel ? `thinking ${s.thinkingLevel}` : undefined,
    s.activeTools !== undefined
      ? `tools ${s.activeTools === null ? "all" : s.activeTools.join(",") || "none"}`
      : undefined,
    s.approvalRules?.length ? `${s.approvalRules.length} approval rule(s)` : undefined,
    s.budget ? "budget" : undefined,
    s.compaction ? `compaction ${s.compaction.enabled ? "on" : "off"}` : undefined,
  ].filter(Boolean);
  const count = sessions !== undefined ? ` · ${sessions} session(s)` : "";
  io.stdout.write(`  v${v.version}  ${new Date(v.createdAt).toISOString()}  ${parts.join(" · ")}${count}\n`);
  if (v.description) io.stdout.write(`      ${v.description}\n`);
  if (s.systemPrompt) io.stdout.write(`      prompt: ${JSON.stringify(s.systemPrompt.slice(0, 100))}\n`);
}

/** Sessions per version of `name`, or undefined when the store cannot say (the listing still prints). */
async function countsOf(client: FleetClient, name?: string): Promise<Map<string, number> | undefined> {
  try {
    const reply = await client.countAgentSessions(name);
    return new Map(reply.counts.map((c) => [`${c.name}@${c.version}`, c.sessions]));
  } catch {
    return undefined;
  }
}

export async function agentWriteCommand(
  io: CliIo,
  op: "create" | "update",
  name: string,
  opts: AgentWriteOptions,
): Promise<number> {
  const def = definitionOf(opts);
  return withClient(io, async (client) => {
    const written = op === "create" ? await client.agents.create(name, def) : await client.agents.update(name, def);
    if (opts.json) io.stdout.write(`${JSON.stringify(written)}\n`);
    else io.stdout.write(`${outStyle(io).green("✓")} ${written.name}@${written.version} written\n`);
    return 0;
  });
}

export async function agentShowCommand(
  io: CliIo,
  name: string,
  opts: { version?: number; json?: boolean },
): Promise<number> {
  return withClient(io, async (client) => {
    if (opts.version !== undefined) {
      const version = await client.agents.get(name, opts.version);
      io.stdout.write(`${JSON.stringify(version, null, opts.json ? undefined : 2)}\n`);
      return 0;
    }
    const details = await client.agents.show(name);
    const counts = await countsOf(client, name);
    if (opts.json) {
      const versions = details.versions.map((v) => ({ ...v, sessions: counts?.get(`${name}@${v.version}`) ?? 0 }));
      io.stdout.write(`${JSON.stringify({ ...details, versions })}\n`);
      return 0;
    }
    io.stdout.write(`${outStyle(io).bold(details.name)} latest v${details.latest}\n`);
    for (const v of details.versions) {
      printVersion(io, v, counts ? (counts.get(`${name}@${v.version}`) ?? 0) : undefined);
    }
    return 0;
  });
}

export async function agentListCommand(io: CliIo, opts: { json?: boolean }): Promise<number> {
  return withClient(io, async (client) => {
    const agents = await client.agents.list();
    const counts = await countsOf(client);
    const sessionsOf = (name: string) =>
      counts === undefined
        ? undefined
        : [...counts].filter(([ref]) => ref.startsWith(`${name}@`)).reduce((n, [, c]) => n + c, 0);
    if (opts.json) {
      io.stdout.write(
        `${JSON.stringify({ agents: agents.map((a) => ({ ...a, sessions: sessionsOf(a.name) ?? null })) })}\n`,
      );
      return 0;
    }
    if (agents.length === 0) io.stdout.write("no agents\n");
    for (const a of agents) {
      const sessions = sessionsOf(a.name);
      const count = sessions !== undefined ? `  ${sessions} session(s)` : "";
      io.stdout.write(`${a.name}  v${a.latest}  ${new Date(a.updatedAt).toISOString()}${count}\n`);
    }
    return 0;
  });
}

/** Creates a session from `agent` (`name` or `name@version`); prints its id. */
export async function agentNewCommand(io: CliIo, agent: string, opts: { session?: string }): Promise<number> {
  return withClient(io, async (client) => {
    const created = await client.createSession({}, { agent, sessionId: opts.session ?? newSessionId() });
    io.stdout.write(`${created.sessionId}\n`);
    return 0;
  });
}

/** `set_agent`: the session moves to the version at its next turn boundary. */
export async function agentSetCommand(io: CliIo, sessionId: string, agent: string): Promise<number> {
  return withClient(io, async (client) => {
    const outcome = await client.setAgent(sessionId, agent);
    io.stdout.write(`${outStyle(io).green("✓")} ${sessionId} moves to ${agent} (seq ${outcome.seq})\n`);
    return 0;
  });
}
