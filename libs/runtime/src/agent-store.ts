// Agents in KV `fleet_agents` (PROTOCOL "Agents"): versions written with create (never replaced), a
// latest pointer moved forward by compare-and-set. No number of concurrent writers loses or
// duplicates a version: each takes the next number nobody created yet.
import { AGENT_KEYS, AgentLatest, type AgentSettings, AgentVersion, parseJson, versionOfKey } from "@fleet/protocol";
import type { KV, KvEntry } from "@nats-io/kv";
import type { z } from "zod";
import { readKvEntries } from "./kv-entries.js";
import { isWrongLastSequence } from "./partition-leases.js";

/** Why a write or read of an agent was refused (a fact, not a transport failure). */
export class AgentStoreError extends Error {
  override readonly name = "AgentStoreError";
  readonly code: "exists" | "not_found" | "invalid";
  constructor(code: "exists" | "not_found" | "invalid", message: string) {
    super(message);
    this.code = code;
  }
}

/** What a new version holds besides its number and time. */
export interface AgentVersionInput {
  settings: AgentSettings;
  description?: string | undefined;
}

/** One agent as listed: its name and latest version. */
export interface AgentSummary {
  name: string;
  latest: number;
  updatedAt: number;
}

export interface AgentStore {
  /** Writes version 1 of a new agent. Errors: `AgentStoreError` `exists` when the agent has a version. */
  create(name: string, input: AgentVersionInput, now: number): Promise<AgentVersion>;
  /** Writes the agent's next version. Errors: `AgentStoreError` `not_found` when it has none. */
  update(name: string, input: AgentVersionInput, now: number): Promise<AgentVersion>;
  /** The version (absent: the latest), or null when there is no such agent or version. */
  get(name: string, version?: number): Promise<AgentVersion | null>;
  /** Every agent with its latest version, by name. */
  list(): Promise<AgentSummary[]>;
  /** Every version of an agent, oldest first (empty: no such agent). */
  versions(name: string): Promise<AgentVersion[]>;
}

function decode<T>(schema: z.ZodType<T>, entry: KvEntry, what: string): T {
  const json = parseJson(entry.value);
  const parsed = json.ok ? schema.safeParse(json.value) : undefined;
  if (!parsed?.success) throw new AgentStoreError("invalid", `${what} in KV is not valid`);
  return parsed.data;
}

const isPut = (entry: KvEntry | null): entry is KvEntry => entry !== null && entry.operation === "PUT";

export function createAgentStore(kv: KV): AgentStore {
  const readVersion = async (name: string, version: number): Promise<AgentVersion | null> => {
    const entry = await kv.get(AGENT_KEYS.version(name, version));
    return isPut(entry) ? decode(AgentVersion, entry, `agent ${name} version ${version}`) : null;
  };

  const allVersions = async (name: string): Promise<AgentVersion[]> => {
    const entries = await readKvEntries(kv, AGENT_KEYS.ofAgent(name));
    return entries
      .filter((e) => versionOfKey(e.key) !== undefined)
      .map((e) => decode(AgentVersion, e, `agent ${name} ${e.key}`))
      .sort((a, b) => a.version - b.version);
  };

  /** The latest version number: the pointer, or (a writer died before moving it) the highest key. */
  const latestNumber = async (name: string): Promise<number | null> => {
    const pointer = await kv.get(AGENT_KEYS.latest(name));
    const fromPointer = isPut(pointer) ? decode(AgentLatest, pointer, `agent ${name} latest`).version : 0;
    const next = fromPointer > 0 ? await kv.get(AGENT_KEYS.version(name, fromPointer + 1)) : null;
    if (fromPointer > 0 && !isPut(next)) return fromPointer;
    const highest = (await allVersions(name)).at(-1)?.version ?? 0;
    return Math.max(highest, fromPointer) || null;
  };

  /** Moves the pointer to `version` unless it is already there or beyond (compare-and-set). */
  const advanceLatest = async (name: string, version: number, now: number): Promise<void> => {
    const key = AGENT_KEYS.latest(name);
    const value = JSON.stringify({ version, updatedAt: now } satisfies AgentLatest);
    for (;;) {
      const entry = await kv.get(key);
      try {
        if (!isPut(entry)) await kv.create(key, value);
        else if (decode(AgentLatest, entry, `agent ${name} latest`).version >= version) return;
        else await kv.update(key, value, entry.revision);
        return;
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
      }
    }
  };

  const write = async (name: string, first: number, input: AgentVersionInput, now: number, isNew: boolean) => {
    let version = first;
    for (;;) {
      const record: AgentVersion = {
        name,
        version,
        ...(input.description !== undefined ? { description: input.description } : {}),
        settings: input.settings,
        createdAt: now,
      };
      try {
        await kv.create(AGENT_KEYS.version(name, version), JSON.stringify(AgentVersion.parse(record)));
        await advanceLatest(name, version, now);
        return record;
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
        if (isNew) throw new AgentStoreError("exists", `Agent ${name} already exists`);
        version++;
      }
    }
  };

  return {
    async create(name, input, now) {
      if ((await latestNumber(name)) !== null) throw new AgentStoreError("exists", `Agent ${name} already exists`);
      return write(name, 1, input, now, true);
    },
    async update(name, input, now) {
      const latest = await latestNumber(name);
      if (latest === null) throw new AgentStoreError("not_found", `Agent ${name} not found`);
      return write(name, latest + 1, input, now, false);
    },
    async get(name, version) {
      const wanted = version ?? (await latestNumber(name));
      return wanted === null ? null : readVersion(name, wanted);
    },
    async list() {
      const entries = await readKvEntries(kv, AGENT_KEYS.latestPointers);
      return entries
        .map((e) => {
          const latest = decode(AgentLatest, e, e.key);
          return { name: e.key.slice(0, -".latest".length), latest: latest.version, updatedAt: latest.updatedAt };
        })
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    versions: allVersions,
  };
}
